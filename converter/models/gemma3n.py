"""Gemma 3n (text): Gemma 3's attention (q/k norms, weightless v norm, scale 1, sliding and full
layers with their own rope) inside AltUp: `altup_num_inputs` streams of the hidden state, one
of them run through each layer (with a LAuReL low-rank residual and a per-layer input from the
token's own embedding table), the others predicted and corrected around it. The last layers
reuse the keys and values of the last earlier layer of their type instead of keeping a cache;
the MLPs of some layers keep only activations above a Gaussian quantile."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Embedding, Linear, RMSNorm, activation, make_norm
from converter.components.norms import per_head
from converter.config import (
    FULL,
    SLIDING,
    ArchitectureConfig,
    ConfigReader,
    ConfigRules,
    parse_local_rope,
)
from converter.errors import MobiusError
from converter.execution_providers import SKIP_NORM
from converter.models.decoder import AttentionKernelChoice, attention_spec
from converter.models.gemma4 import Gemma4LM, kv_sources
from converter.registry import Family
from converter.tasks.text_generation import DecoderInputs

_MIN_MAGNITUDE = 1e-5


@dataclass(frozen=True)
class Gemma3nConfig(ArchitectureConfig):
    layer_intermediate: tuple[int, ...] = ()
    sparsity: tuple[float, ...] = ()  # activation_sparsity_pattern, per layer
    kv_sources: tuple[int | None, ...] = ()  # the layer whose keys/values each attends (None: own)
    per_layer_vocab: int = 0
    per_layer_size: int = 0
    streams: int = 1  # altup_num_inputs
    active_stream: int = 0
    correct_scale: bool = True
    laurel_rank: int = 1


def _magnitude(op, x):
    return op.Sqrt(op.ReduceMean(op.Mul(x, x), [-1]))


def _rescaled(op, x, target):
    """x with the root-mean-square magnitude `target`."""
    magnitude = op.Sqrt(op.Max(op.ReduceMean(op.Mul(x, x), [-1]), _MIN_MAGNITUDE))
    return op.Div(op.Mul(x, target), magnitude)


def _stream(op, streams, index: int):
    return op.Gather(streams, index, axis=0)


class Gemma3nAttention(nn.Module):
    """q/k/v projections with per-head norms (v's without weight); a layer that reuses another
    layer's keys and values has only `q_proj` and `q_norm`."""

    def __init__(self, cfg: Gemma3nConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.spec = attention_spec(cfg, index)
        d, hidden = cfg.head_dim, cfg.hidden_size
        self.shared = cfg.kv_sources[index] is not None
        self.q_proj = Linear(hidden, cfg.num_attention_heads * d, cfg.qkv_bias, dtype)
        self.q_norm = make_norm(cfg, d, dtype)
        if not self.shared:
            self.k_proj = Linear(hidden, cfg.num_key_value_heads * d, cfg.qkv_bias, dtype)
            self.v_proj = Linear(hidden, cfg.num_key_value_heads * d, cfg.qkv_bias, dtype)
            self.k_norm = make_norm(cfg, d, dtype)
            self.v_norm = RMSNorm(d, cfg.norm_eps, dtype, affine=False)
        self.o_proj = Linear(cfg.num_attention_heads * d, hidden, cfg.o_bias, dtype)

    def forward(self, op, x, kernel, key, value):
        """`key`, `value`: this layer's past, or (shared) the whole keys and values it reuses."""
        spec = self.spec
        q = per_head(op, self.q_norm, self.q_proj(op, x), spec.head_dim)
        if not self.shared:
            k = per_head(op, self.k_norm, self.k_proj(op, x), spec.head_dim)
            v = per_head(op, self.v_norm, self.v_proj(op, x), spec.head_dim)
            y, key, value = kernel(op, q, k, v, key, value, spec)
            return self.o_proj(op, y), key, value
        q = kernel.rotate(op, q, spec.heads, spec.rope)
        q = op.Transpose(op.Reshape(q, [0, 0, -1, spec.head_dim]), perm=[0, 2, 1, 3])
        y = op.Attention(q, key, value, kernel.mask(op, spec), scale=spec.scale)
        y = op.Reshape(op.Transpose(y, perm=[0, 2, 1, 3]), [0, 0, -1])
        return self.o_proj(op, y), None, None


class Gemma3nMLP(nn.Module):
    def __init__(self, cfg: Gemma3nConfig, index: int, dtype: ir.DataType):
        super().__init__()
        hidden, inner = cfg.hidden_size, cfg.layer_intermediate[index]
        self.act = cfg.activation
        self.gate_proj = Linear(hidden, inner, False, dtype)
        self.up_proj = Linear(hidden, inner, False, dtype)
        self.down_proj = Linear(inner, hidden, False, dtype)
        sparsity = cfg.sparsity[index]
        # the gate's cutoff: its mean plus this many standard deviations (float32, as torch's)
        quantile = statistics.NormalDist().inv_cdf(sparsity) if sparsity > 0 else None
        self.cutoff = None if quantile is None else float(np.float32(quantile))

    def forward(self, op, x):
        gate = self.gate_proj(op, x)
        if self.cutoff is not None:
            mean = op.ReduceMean(gate, [-1])
            centered = op.Sub(gate, mean)
            std = op.Sqrt(op.ReduceMean(op.Mul(centered, centered), [-1]))
            gate = op.Relu(op.Sub(gate, op.Add(mean, op.Mul(std, self.cutoff))))
        h = op.Mul(activation(op, self.act, gate), self.up_proj(op, x))
        return self.down_proj(op, h)


class Gemma3nLaurel(nn.Module):
    """x + norm(right(left(x))): a learned low-rank residual."""

    def __init__(self, cfg: Gemma3nConfig, dtype: ir.DataType):
        super().__init__()
        self.linear_left = Linear(cfg.hidden_size, cfg.laurel_rank, False, dtype)
        self.linear_right = Linear(cfg.laurel_rank, cfg.hidden_size, False, dtype)
        self.post_laurel_norm = make_norm(cfg, cfg.hidden_size, dtype)

    def forward(self, op, x):
        low_rank = self.linear_right(op, self.linear_left(op, x))
        return op.Add(x, self.post_laurel_norm(op, low_rank))


class Gemma3nAltUp(nn.Module):
    """Predicts every stream from all of them before a layer, and corrects them by the active
    stream's update after it, with coefficients routed from the active stream."""

    def __init__(self, cfg: Gemma3nConfig, dtype: ir.DataType):
        super().__init__()
        n, hidden = cfg.streams, cfg.hidden_size
        self.n, self.active = n, cfg.active_stream
        self.correct_output_scale = nn.Parameter([hidden], dtype)
        self.correction_coefs = Linear(n, n, False, dtype)
        self.prediction_coefs = Linear(n, n * n, False, dtype)
        self.modality_router = Linear(hidden, n, False, dtype)
        self.router_norm = make_norm(cfg, hidden, dtype)
        self.router_scale = 1.0 / hidden

    def expected_fusions(self, plan) -> dict[str, int]:
        return plan.quantized_matmuls()  # the router's second run

    def _route(self, op, x):
        return op.Tanh(self.modality_router(op, op.Mul(self.router_norm(op, x), self.router_scale)))

    def forward(self, op, streams, step: str, activated=None):
        """`step` "predict": streams + routed mix of them; "correct": predictions (`streams`)
        + routed multiples of the active stream's innovation (`activated` - its prediction);
        "scale": the active corrected stream times `correct_output_scale`."""
        if step == "scale":
            return op.Mul(_stream(op, streams, self.active), self.correct_output_scale)
        if step == "predict":
            coefs = self.prediction_coefs(op, self._route(op, _stream(op, streams, self.active)))
            coefs = op.Transpose(op.Reshape(coefs, [0, 0, self.n, self.n]), perm=[0, 1, 3, 2])
            mixed = op.MatMul(op.Transpose(streams, perm=[1, 2, 3, 0]), coefs)
            return op.Add(op.Transpose(mixed, perm=[3, 0, 1, 2]), streams)
        innovation = op.Sub(activated, _stream(op, streams, self.active))
        coefs = op.Add(self.correction_coefs(op, self._route(op, activated)), 1.0)
        coefs = op.Unsqueeze(op.Transpose(coefs, perm=[2, 0, 1]), [-1])
        return op.Add(op.Mul(innovation, coefs), streams)


class Gemma3nLayer(nn.Module):
    def __init__(self, cfg: Gemma3nConfig, index: int, dtype: ir.DataType):
        super().__init__()
        hidden, per_layer = cfg.hidden_size, cfg.per_layer_size
        self.cfg = cfg
        self.self_attn = Gemma3nAttention(cfg, index, dtype)
        self.mlp = Gemma3nMLP(cfg, index, dtype)
        for name in (
            "input_layernorm",
            "post_attention_layernorm",
            "pre_feedforward_layernorm",
            "post_feedforward_layernorm",
            "post_per_layer_input_norm",
        ):
            setattr(self, name, make_norm(cfg, hidden, dtype))
        self.altup = Gemma3nAltUp(cfg, dtype)
        self.laurel = Gemma3nLaurel(cfg, dtype)
        self.per_layer_input_gate = Linear(hidden, per_layer, False, dtype)
        self.per_layer_projection = Linear(per_layer, hidden, False, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # the router norm of the correction reads the layer's output sum
        return {"skip_norms": 1} if plan.has(SKIP_NORM) else {}

    def forward(self, op, streams, per_layer_input, kernel, key, value):
        predictions = self.altup(op, streams, "predict")
        active = _stream(op, predictions, self.cfg.active_stream)
        normed = self.input_layernorm(op, active)
        laurel = self.laurel(op, normed)
        a, key, value = self.self_attn(op, normed, kernel, key, value)
        a = op.Add(active, self.post_attention_layernorm(op, a))
        a = op.Div(op.Add(a, laurel), math.sqrt(2.0))
        m = self.post_feedforward_layernorm(op, self.mlp(op, self.pre_feedforward_layernorm(op, a)))
        corrected = self.altup(op, predictions, "correct", op.Add(a, m))
        if self.cfg.correct_scale:
            first = self.altup(op, corrected, "scale")
        else:
            first = _stream(op, corrected, self.cfg.active_stream)
        gate = activation(op, self.cfg.activation, self.per_layer_input_gate(op, first))
        first = self.per_layer_projection(op, op.Mul(gate, per_layer_input))
        first = self.post_per_layer_input_norm(op, first)
        rest = op.Add(op.Slice(corrected, [1], [self.cfg.streams], [0]), first)
        return op.Concat(op.Slice(corrected, [0], [1], [0]), rest, axis=0), key, value


class Gemma3nBody(nn.Module):
    def __init__(self, cfg: Gemma3nConfig, dtype: ir.DataType, ep):
        super().__init__()
        hidden, layers, per_layer = cfg.hidden_size, cfg.num_hidden_layers, cfg.per_layer_size
        self.cfg = cfg
        self.kernel = AttentionKernelChoice(
            cfg, ep, dtype, "layers reuse earlier layers' whole keys and values"
        )
        self.embed_tokens = Embedding(cfg.vocab_size, hidden, dtype, cfg.embedding_multiplier)
        table = Embedding(cfg.per_layer_vocab, layers * per_layer, dtype, per_layer**0.5)
        self.embed_tokens_per_layer = table
        self.per_layer_model_projection = Linear(hidden, layers * per_layer, False, dtype)
        self.per_layer_projection_norm = make_norm(cfg, per_layer, dtype)
        extra = range(cfg.streams - 1)
        self.altup_projections = nn.ModuleList(
            [Linear(hidden, hidden, False, dtype) for _ in extra]
        )
        self.altup_unembed_projections = nn.ModuleList(
            [Linear(hidden, hidden, False, dtype) for _ in extra]
        )
        self.layers = nn.ModuleList([Gemma3nLayer(cfg, i, dtype) for i in range(layers)])
        self.norm = make_norm(cfg, hidden, dtype)

    @property
    def embedding(self) -> Embedding:
        return self.embed_tokens

    def _per_layer_inputs(self, op, inputs: DecoderInputs, x):
        """[batch, sequence, layer, per_layer_size]: the projected embeddings, with the token's
        own per-layer embeddings (ids outside that table read row 0)."""
        cfg = self.cfg
        projected = op.Mul(self.per_layer_model_projection(op, x), cfg.hidden_size**-0.5)
        shape = [0, 0, cfg.num_hidden_layers, cfg.per_layer_size]
        projected = self.per_layer_projection_norm(op, op.Reshape(projected, shape))
        ids = inputs.tokens
        in_table = op.And(op.GreaterOrEqual(ids, 0), op.Less(ids, cfg.per_layer_vocab))
        own = self.embed_tokens_per_layer(op, op.Where(in_table, ids, 0))
        return op.Mul(op.Add(projected, op.Reshape(own, shape)), 0.5**0.5)

    def forward(self, op, inputs: DecoderInputs):
        if inputs.embedded:
            raise MobiusError("Gemma 3n's per-layer embeddings are looked up by input_ids")
        x = self.embed_tokens(op, inputs.tokens, inputs.embedded)
        per_layer = self._per_layer_inputs(op, inputs, x)
        target = _magnitude(op, x)
        streams = [x] + [_rescaled(op, p(op, x), target) for p in self.altup_projections]
        streams = op.Concat(*(op.Unsqueeze(s, [0]) for s in streams), axis=0)
        kernel = self.kernel.make(op, inputs.tokens, inputs.attention_mask, inputs.position_ids)
        past, kv, presents = iter(inputs.past), {}, []
        for i, layer in enumerate(self.layers):
            source = self.cfg.kv_sources[i]
            key, value = next(past) if source is None else kv[source]
            layer_input = op.Gather(per_layer, i, axis=2)
            streams, key, value = layer(op, streams, layer_input, kernel, key, value)
            if source is None:
                kv[i] = key, value
                presents.append((key, value))
        first = _stream(op, streams, 0)
        target = _magnitude(op, first)
        unembedded = [
            _rescaled(op, p(op, _stream(op, streams, i + 1)), target)
            for i, p in enumerate(self.altup_unembed_projections)
        ]
        stacked = op.Concat(*(op.Unsqueeze(s, [0]) for s in [first, *unembedded]), axis=0)
        return self.norm(op, op.ReduceMean(stacked, [0], keepdims=0)), presents


class Gemma3nLM(Gemma4LM):
    """Gemma 4's LM (its later layers keep no cache) over the AltUp body."""

    body_cls = Gemma3nBody


class Gemma3nRules(ConfigRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return FULL if (index + 1) % 5 == 0 else SLIDING

    def local_rope(self, r: ConfigReader, head_dim: int):
        return parse_local_rope(r.raw, head_dim=head_dim)

    def attention_scale(self, r: ConfigReader, head_dim: int) -> float:
        return 1.0

    def read(self, r: ConfigReader) -> Gemma3nConfig:
        sizes = r.raw.get("intermediate_size")
        if isinstance(sizes, list):  # one size per layer
            r = ConfigReader({**r.raw, "intermediate_size": max(sizes)}, r.model_type)
        cfg = super().read(r)
        layers = cfg.num_hidden_layers
        sizes = sizes if isinstance(sizes, list) else [cfg.intermediate_size] * layers
        sparsity = r.raw.get("activation_sparsity_pattern")
        if sparsity is None:
            sparse = 10 if layers > 10 else 0
            sparsity = [0.95] * sparse + [0.0] * (layers - sparse)
        for key, values in (
            ("intermediate_size", sizes),
            ("activation_sparsity_pattern", sparsity),
        ):
            if not isinstance(values, list) or len(values) != layers:
                r.refuse(key, f"give one value per layer ({layers}) or a single one")
        streams = r.int("altup_num_inputs", default=4)
        return Gemma3nConfig(
            **vars(cfg),
            layer_intermediate=tuple(sizes),
            sparsity=tuple(float(s) for s in sparsity),
            kv_sources=kv_sources(r, cfg.layer_types, shared_default=15),
            per_layer_vocab=r.int("vocab_size_per_layer_input", default=262_144),
            per_layer_size=r.int("hidden_size_per_layer_input", default=256),
            streams=streams,
            active_stream=r.int("altup_active_idx", default=0, lo=0, hi=streams - 1),
            correct_scale=r.bool("altup_correct_scale", default=True),
            laurel_rank=r.int("laurel_rank", default=64),
        )


FAMILIES = [
    Family(
        "gemma3n_text",
        Gemma3nLM,
        "AltUp streams, LAuReL residuals, per-layer token embeddings, shared KV in the last "
        "layers, Gaussian top-k activation sparsity",
        rules=Gemma3nRules(embed_scale_sqrt=True, qk_norm="head"),
    ),
]
