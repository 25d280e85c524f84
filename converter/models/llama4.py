"""Llama 4 (text): Llama whose MoE layers (`moe_layers`, or every `interleave_moe_layer_step`-th)
run a shared expert plus the top-k routed experts, each fed the token scaled by the sigmoid of
its router logit (the input is scaled, not the output); rope layers attend within chunks of
`attention_chunk_size` and L2-normalize q and k after rotating them; the NoPE layers
(`no_rope_layers` 0) attend to everything and scale q by a temperature growing with the
position (`attn_temperature_tuning`)."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir

from converter.components.attention import Attention, AttentionSpec, StandardAttention
from converter.components.experts import InputMajor
from converter.components.masks import _MASKED
from converter.components.moe import SparseMoe
from converter.config import FULL, ArchitectureConfig, ConfigReader, Rope, extend
from converter.config.moe import SIGMOID, MoeConfig, MoeRules
from converter.errors import ConfigError
from converter.models.decoder import AttentionKernelChoice, DecoderBody, DecoderLayer, DecoderLM
from converter.models.smollm3 import _uses_rope
from converter.registry import Family

CHUNKED = "chunked_attention"


@dataclasses.dataclass(frozen=True)
class Llama4Config(ArchitectureConfig):
    chunk: int | None = None  # attention_chunk_size, None where no sequence can outgrow it
    chunked_layers: tuple[bool, ...] = ()
    qk_l2_norm: bool = False  # rope layers' q and k divided by their RMS per head
    temperature: tuple[float, float] | None = None  # NoPE layers' (floor_scale, attn_scale)


class Llama4Rules(MoeRules):
    def __init__(self) -> None:
        super().__init__(expert_size_keys=("intermediate_size",))

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        rope = super().rope(r, head_dim)  # rotates complex pairs (2i, 2i + 1)
        return dataclasses.replace(rope, interleaved=True)

    def layer_ropes(self, r: ConfigReader, head_dim: int, layer_types) -> tuple[Rope | None, ...]:
        rope = self.rope(r, head_dim)
        return tuple(rope if uses else None for uses in _uses_rope(r))

    def attention_windows(self, r: ConfigReader, layers: int):
        return None, (FULL,) * layers  # chunks are read in `read`

    def moe(self, r: ConfigReader, cfg: ArchitectureConfig) -> MoeConfig:
        moe = super().moe(r, cfg)
        return dataclasses.replace(
            moe,
            normalize=False,
            scoring=SIGMOID,
            sparse_layers=_moe_layers(r, cfg.num_hidden_layers),
            shared_size=moe.expert_size,
        )

    def read(self, r: ConfigReader) -> Llama4Config:
        cfg = super().read(r)
        layers = cfg.num_hidden_layers
        chunk = r.raw.get("attention_chunk_size")
        chunk = None if chunk is None else r.int("attention_chunk_size")
        kinds = r.raw.get("layer_types") or [
            CHUNKED if uses and chunk is not None else FULL for uses in _uses_rope(r)
        ]
        if not isinstance(kinds, list) or len(kinds) != layers or set(kinds) - {CHUNKED, FULL}:
            raise ConfigError(
                f"'layer_types' must list {CHUNKED!r} or {FULL!r} for each of the {layers} layers"
            )
        if CHUNKED in kinds and chunk is None:
            raise ConfigError(
                "'layer_types' asks for chunked attention: set 'attention_chunk_size'"
            )
        if chunk is not None and chunk >= cfg.max_position_embeddings:
            chunk = None  # one chunk holds every position: plain causal attention
        temperature = None
        if r.bool("attn_temperature_tuning", True):
            temperature = (r.float("floor_scale", default=8192), r.float("attn_scale", default=0.1))
        return extend(
            cfg,
            Llama4Config,
            intermediate_size=r.int("intermediate_size_mlp", default=cfg.intermediate_size),
            chunk=chunk,
            chunked_layers=tuple(chunk is not None and k == CHUNKED for k in kinds),
            qk_l2_norm=r.bool("use_qk_norm", True),
            temperature=temperature,
        )


def _moe_layers(r: ConfigReader, layers: int) -> tuple[bool, ...]:
    listed = r.raw.get("moe_layers")
    if listed is None:
        step = r.int("interleave_moe_layer_step", default=1)
        listed = list(range(step - 1, layers, step))
    if not isinstance(listed, list) or not all(
        isinstance(i, int) and 0 <= i < layers for i in listed
    ):
        raise ConfigError(f"'moe_layers' must list layer indices below {layers}")
    return tuple(i in listed for i in range(layers))


class Llama4Moe(SparseMoe):
    """Routed experts fed x * sigmoid(logit) at each pick (x itself nowhere else: an expert
    without biases maps 0 to 0), plus the shared expert."""

    router_name = "router"
    layout = InputMajor("gate_up_proj", "down_proj")

    def kernel_refused(self, cfg, activation: str) -> str | None:
        if self.moe.top_k > 1:  # top-1: the one pick's scaled input, weight 1, is exact
            return "router scores scale each expert's input, the MoE kernel weights outputs"
        return super().kernel_refused(cfg, activation)

    def forward(self, op, x):
        flat = op.Reshape(x, [-1, self.hidden])
        logits = self.router(op, flat)
        if self.kernel:
            best = op.ReduceMax(logits, [-1], keepdims=1)
            out = self.experts(op, op.Mul(flat, op.Sigmoid(best)), logits, normalize=True)
        else:
            scores = op.Transpose(self.route(op, self.router, logits), perm=[1, 0])  # [E, T]
            inputs = op.Mul(op.Unsqueeze(flat, [0]), op.Unsqueeze(scores, [2]))  # [E, T, H]
            ones = op.Add(op.Mul(logits, 0.0), 1.0)
            out = self.experts(op, inputs, ones)
        out = op.Add(out, self.shared_expert(op, flat))
        return op.Reshape(out, op.Shape(x))


@dataclasses.dataclass(frozen=True)
class ChunkedSpec(AttentionSpec):
    chunk: int | None = None  # keys only from the query's chunk of positions


class Llama4Attention(Attention):
    def configure(self, cfg: Llama4Config, index: int) -> None:
        values = {f.name: getattr(self.spec, f.name) for f in dataclasses.fields(AttentionSpec)}
        chunk = cfg.chunk if cfg.chunked_layers[index] else None
        self.spec = ChunkedSpec(**values, chunk=chunk)
        self.l2_norm = cfg.qk_l2_norm and self.spec.rope is not None
        self.eps = cfg.norm_eps
        self.tuned = cfg.temperature is not None and self.spec.rope is None

    def forward(self, op, x, kernel, past_key, past_value):
        if not (self.l2_norm or self.tuned):
            return super().forward(op, x, kernel, past_key, past_value)
        q, k, v = self._project(op, x)
        spec = self.spec
        if self.l2_norm:  # after rotating, so the kernel gets them rotated
            q = self._l2(op, kernel.rotate(op, q, spec.heads, spec.rope))
            k = self._l2(op, kernel.rotate(op, k, spec.kv_heads, spec.rope))
            spec = dataclasses.replace(spec, rope=None)
        if self.tuned:
            q = op.Mul(q, kernel.query_scales)
        y, present_key, present_value = kernel(op, q, k, v, past_key, past_value, spec)
        return self._output(op, y, x), present_key, present_value

    def _l2(self, op, x):
        heads = op.Reshape(x, [0, 0, -1, self.spec.head_dim])
        mean_square = op.ReduceMean(op.Mul(heads, heads), [-1], keepdims=1)
        normed = op.Div(heads, op.Sqrt(op.Add(mean_square, self.eps)))
        return op.Reshape(normed, [0, 0, -1])


class ChunkedAttention(StandardAttention):
    """StandardAttention whose chunked layers see only keys of their query's chunk, chunks
    counted from each row's first real token."""

    def __init__(self, op, dtype, tokens, attention_mask, position_ids, windows):
        super().__init__(op, dtype, tokens, attention_mask, position_ids, windows)
        self.chunk_ids, self.chunked = (attention_mask, tokens), {}

    def mask(self, op, spec: AttentionSpec):
        chunk = getattr(spec, "chunk", None)
        if chunk is None:
            return super().mask(op, spec)
        if chunk not in self.chunked:
            attention_mask, tokens = self.chunk_ids
            positions = op.Sub(op.CumSum(attention_mask, 1), 1)  # [B, T]
            keys = op.Div(op.Max(positions, op.Constant(value_int=0)), chunk)
            past = op.Sub(
                op.Shape(attention_mask, start=1, end=2), op.Shape(tokens, start=1, end=2)
            )
            queries = op.Slice(keys, past, [2**62], [1])  # [B, S]
            same = op.Equal(op.Unsqueeze(queries, [1, 3]), op.Unsqueeze(keys, [1, 2]))
            full = super().mask(op, dataclasses.replace(spec, window=None))
            masked = op.Constant(value=ir.tensor(_MASKED[self.dtype], dtype=self.dtype))
            self.chunked[chunk] = op.Where(same, full, masked)
        return self.chunked[chunk]


class Llama4KernelChoice(AttentionKernelChoice):
    """The chunked StandardAttention (GroupQueryAttention where no layer is chunked), with the
    NoPE layers' query temperatures: 1 + attn_scale * log1p(floor((i + 1) / floor_scale)) at
    each token's cache index i (padding included, as transformers counts)."""

    def __init__(self, cfg: Llama4Config, ep, dtype):
        refused = None
        if any(cfg.chunked_layers):
            refused = "chunked attention (attention_chunk_size) is no sliding local window"
        super().__init__(cfg, ep, dtype, refused)
        self.temperature = cfg.temperature

    def make(self, op, tokens, attention_mask, position_ids):
        if self.gqa:
            kernel = super().make(op, tokens, attention_mask, position_ids)
        else:
            kernel = ChunkedAttention(
                op, self.dtype, tokens, attention_mask, position_ids, self.windows
            )
        if self.temperature is not None:
            floor_scale, attn_scale = self.temperature
            total = op.Squeeze(op.Shape(attention_mask, start=1, end=2))
            past = op.Sub(total, op.Squeeze(op.Shape(tokens, start=1, end=2)))
            index = op.Cast(op.Range(op.Add(past, 1), op.Add(total, 1), 1), to=ir.DataType.FLOAT)
            tuned = op.Log(op.Add(op.Floor(op.Div(index, floor_scale)), 1.0))
            scales = op.Add(op.Mul(tuned, attn_scale), 1.0)
            kernel.query_scales = op.Cast(op.Unsqueeze(scales, [0, 2]), to=self.dtype)
        return kernel


class Llama4Layer(DecoderLayer):
    attention_cls = Llama4Attention
    mlp_name = "feed_forward"
    moe_cls = Llama4Moe

    def __init__(self, cfg: Llama4Config, index: int, dtype: ir.DataType, ep):
        super().__init__(cfg, index, dtype, ep)
        self.self_attn.configure(cfg, index)


class Llama4Body(DecoderBody):
    layer_cls = Llama4Layer

    def __init__(self, cfg: Llama4Config, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        self.kernel = Llama4KernelChoice(cfg, ep, dtype)


class Llama4LM(DecoderLM):
    body_cls = Llama4Body


FAMILIES = [
    Family(
        "llama4_text",
        Llama4LM,
        "shared expert plus sigmoid-scored experts fed the scaled token (the MoE kernel at "
        "top-1); chunked attention, NoPE layers with query temperature, L2 q/k norm",
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct",),
        rules=Llama4Rules(),
        category="moe",
    ),
]
