"""Dory: an nGPT decoder (hidden states kept on the unit sphere by L2 norms, residuals that
interpolate towards each block's normalized output at learned rates, learned scales on q, the
attention gate, the MLP and the logits) with recurrent depth: input layers, then the recurrent
layers run `n_recurrent_loops` times (each loop restarting from the input section's output),
then output layers. Sliding and full attention layers have their own rope. Tensor names are
those transformers' save_pretrained writes (`backbone.layers.N.self_attn...`); a checkpoint in
the two-block layout (`layers.{2N}.mixer`, `layers.{2N+1}.mixer`) is refused by the binding,
naming the tensors it misses."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import Embedding, Linear, RMSNorm, activation
from converter.components.cache import kv_cache
from converter.components.norms import per_head
from converter.config import (
    FULL,
    SLIDING,
    ArchitectureConfig,
    ConfigReader,
    ConfigRules,
    parse_local_rope,
    parse_rope,
)
from converter.execution_providers import GQA, SKIP_NORM
from converter.models.decoder import (
    AttentionKernelChoice,
    DecoderLM,
    attention_spec,
    declared_fusions,
    layer_caches,
    tied_logits,
)
from converter.registry import Family
from converter.tasks.text_generation import DecoderInputs

_L2_EPS = 1e-6
# config.json lists each layer as an attention block and an "mlp" block, its counts doubled
_DOUBLED = ("num_hidden_layers", "n_input_layers", "n_recurrent_layers", "n_output_layers")


@dataclass(frozen=True)
class DoryConfig(ArchitectureConfig):
    """`num_hidden_layers` and `layer_types` count attention runs (a recurrent layer once per
    loop, as transformers counts its cache layers); `runs` holds each run's layer."""

    runs: tuple[int, ...] = ()
    sections: tuple[int, int, int] = (0, 0, 0)  # input, recurrent, output layers
    loops: int = 1
    last_loop_cache: bool = False  # recurrent_kv_cache_mode "last_loop"
    initializer_range: float = 1.0  # the nGPT parameters are stored as s, used as s * init / this
    alpha_init: float = 0.05

    def first_run(self, layer: int) -> int:
        return self.runs.index(layer)


def l2_norm(size: int, dtype: ir.DataType) -> RMSNorm:
    """x / sqrt(sum(x^2) + eps): an RMSNorm over `size` channels scaled by 1/sqrt(size)."""
    return RMSNorm(size, _L2_EPS / size, dtype, affine=False, scale=size**-0.5)


class DoryAttention(nn.Module):
    def __init__(self, cfg: DoryConfig, index: int, dtype: ir.DataType):
        super().__init__()
        spec = attention_spec(cfg, cfg.first_run(index))
        self.rope, self.spec = spec.rope, dataclasses.replace(spec, rope=None)  # rotated here
        d, hidden = cfg.head_dim, cfg.hidden_size
        q_size, kv_size = spec.heads * d, spec.kv_heads * d
        self.q_proj = Linear(hidden, q_size, cfg.qkv_bias, dtype)
        self.k_proj = Linear(hidden, kv_size, cfg.qkv_bias, dtype)
        self.v_proj = Linear(hidden, kv_size, cfg.qkv_bias, dtype)
        self.o_proj = Linear(q_size, hidden, cfg.o_bias, dtype)
        self.g_proj = Linear(hidden, q_size, False, dtype)
        self.q_norm, self.k_norm = l2_norm(d, dtype), l2_norm(d, dtype)
        self.attn_sub_norm = l2_norm(q_size, dtype)
        self.sqk = nn.Parameter([q_size], dtype)
        self.s_gate = nn.Parameter([q_size], dtype)
        self.sqk_scale = d**0.5 / cfg.initializer_range
        self.s_gate_scale = hidden**0.25 / cfg.initializer_range

    def forward(self, op, x, kernel, past_key, past_value):
        spec = self.spec
        q = per_head(op, self.q_norm, self.q_proj(op, x), spec.head_dim)
        k = per_head(op, self.k_norm, self.k_proj(op, x), spec.head_dim)
        q, k = (
            kernel.rotate(op, q, spec.heads, self.rope),
            kernel.rotate(op, k, spec.kv_heads, self.rope),
        )
        q = op.Mul(q, _squared(op, self.sqk, self.sqk_scale))  # after rope: rotated here
        y, key, value = kernel(op, q, k, self.v_proj(op, x), past_key, past_value, spec)
        gate = op.Mul(self.g_proj(op, x), _squared(op, self.s_gate, self.s_gate_scale))
        y = self.attn_sub_norm(op, op.Mul(y, op.Sigmoid(gate)))
        return self.o_proj(op, y), key, value


def _squared(op, s, scale: float):
    scaled = op.Mul(s, scale)
    return op.Mul(scaled, scaled)


class DoryMLP(nn.Module):
    def __init__(self, cfg: DoryConfig, dtype: ir.DataType):
        super().__init__()
        hidden, inner, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        self.act = cfg.activation
        self.gate_proj = Linear(hidden, inner, bias, dtype)
        self.up_proj = Linear(hidden, inner, bias, dtype)
        self.down_proj = Linear(inner, hidden, bias, dtype)
        self.suv_gate = nn.Parameter([inner], dtype)
        self.suv_up = nn.Parameter([inner], dtype)
        self.suv_scale = hidden**0.5
        self.ffn_sub_norm = l2_norm(inner, dtype)

    def forward(self, op, x):
        gate = op.Mul(self.gate_proj(op, x), op.Mul(self.suv_gate, self.suv_scale))
        up = op.Mul(self.up_proj(op, x), op.Mul(self.suv_up, self.suv_scale))
        h = op.Mul(activation(op, self.act, gate), up)
        return self.down_proj(op, self.ffn_sub_norm(op, h))


class DoryLayer(nn.Module):
    def __init__(self, cfg: DoryConfig, index: int, dtype: ir.DataType):
        super().__init__()
        hidden = cfg.hidden_size
        self.self_attn = DoryAttention(cfg, index, dtype)
        self.mlp = DoryMLP(cfg, dtype)
        self.input_layernorm = l2_norm(hidden, dtype)
        self.post_attention_layernorm = l2_norm(hidden, dtype)
        self.pre_feedforward_layernorm = l2_norm(hidden, dtype)
        self.post_feedforward_layernorm = l2_norm(hidden, dtype)
        self.lambda_1 = nn.Parameter([hidden], dtype)
        self.lambda_2 = nn.Parameter([hidden], dtype)
        self.lambda_scale = cfg.alpha_init / cfg.initializer_range

    def _towards(self, op, h, update, rate):
        """h + |rate * lambda_scale| * (update - h)."""
        return op.Add(h, op.Mul(op.Abs(op.Mul(rate, self.lambda_scale)), op.Sub(update, h)))

    def forward(self, op, x, kernel, past_key, past_value):
        h = self.input_layernorm(op, x)
        a, key, value = self.self_attn(op, h, kernel, past_key, past_value)
        h = self._towards(op, h, self.post_attention_layernorm(op, a), self.lambda_1)
        h = self.pre_feedforward_layernorm(op, h)
        m = self.post_feedforward_layernorm(op, self.mlp(op, h))
        return self._towards(op, h, m, self.lambda_2), key, value


class DoryBody(nn.Module):
    def __init__(self, cfg: DoryConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.cfg = cfg
        self.kernel = AttentionKernelChoice(cfg, ep, dtype)
        self.embeddings = Embedding(cfg.vocab_size, cfg.hidden_size, dtype)
        layers = [DoryLayer(cfg, i, dtype) for i in range(sum(cfg.sections))]
        self.layers = nn.ModuleList(layers)
        self.norm = l2_norm(cfg.hidden_size, dtype)

    @property
    def embedding(self) -> Embedding:
        return self.embeddings

    def expected_fusions(self, plan) -> dict[str, int]:
        runs = len(self.cfg.runs)
        counts = {}
        if plan.has(SKIP_NORM):
            # each run's pre-MLP norm and its input norm (the model's first input norm reads
            # the embeddings, but then the input section's norm reads a sum); the norm starting
            # each loop after the first, and the final one
            counts["skip_norms"] = 2 * runs + self.cfg.loops
        if plan.has(GQA):
            counts[GQA] = runs if self.kernel.gqa else 0
        n_in, n_rec, _ = self.cfg.sections
        recurrent = self.layers[n_in : n_in + n_rec]
        if plan.matmul_fusion is not None:
            one_loop = sum(declared_fusions(m, plan, plan.matmul_fusion) for m in recurrent)
            counts[plan.matmul_fusion] = (self.cfg.loops - 1) * one_loop
        return counts

    def forward(self, op, inputs: DecoderInputs):
        cfg = self.cfg
        kernel = self.kernel.make(op, inputs.tokens, inputs.attention_mask, inputs.position_ids)
        n_in, n_rec, _ = cfg.sections
        h = self.embeddings(op, inputs.tokens, inputs.embedded)
        presents: list = []

        def run(h, index: int, past, keep: bool):
            h, key, value = self.layers[index](op, h, kernel, *past)
            if keep:
                presents.append((key, value))
            return h

        pasts = iter(inputs.past)
        for i in range(n_in):
            h = run(h, i, next(pasts), True)
        start = self.norm(op, h)
        shared = [next(pasts) for _ in range(n_rec)] if cfg.last_loop_cache else None
        for loop in range(cfg.loops):
            h = op.Add(start if loop == 0 else self.norm(op, h), start)
            last = loop == cfg.loops - 1
            for j in range(n_rec):
                past = shared[j] if shared else next(pasts)
                h = run(h, n_in + j, past, not shared or last)
        for i in range(n_in + n_rec, len(self.layers)):
            h = run(h, i, next(pasts), True)
        return self.norm(op, h), presents


class DoryHead(nn.Module):
    """`lm_head` (or the tied embedding table) times a learned per-token `logit_scale`."""

    head = True  # int4 builds: --int4-head-bits; never int8

    def __init__(self, cfg: DoryConfig, dtype: ir.DataType):
        super().__init__()
        self.cfg = cfg
        tied = cfg.tie_word_embeddings
        self.weight = None if tied else nn.Parameter([cfg.vocab_size, cfg.hidden_size], dtype)
        self.logit_scale = nn.Parameter([cfg.vocab_size], dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return plan.quantized_matmuls(head=True) if self.weight is not None else {}

    def forward(self, op, hidden, table):
        if self.weight is None:
            logits = tied_logits(op, self.cfg, table, hidden)
        else:
            logits = op.MatMul(hidden, op.Transpose(self.weight, perm=[1, 0]))
        return op.Mul(logits, op.Mul(self.logit_scale, 1.0 / self.cfg.initializer_range))


class DoryLM(DecoderLM):
    """`backbone` and `lm_head`, under the names transformers' save_pretrained writes."""

    body_cls = DoryBody
    body_name = "backbone"

    def make_head(self, cfg: DoryConfig, dtype: ir.DataType) -> DoryHead:
        return DoryHead(cfg, dtype)

    def caches(self):
        """A cache per run, or (`last_loop_cache`) per layer, which its last run writes."""
        cfg = self.cfg
        if not cfg.last_loop_cache:
            return layer_caches(cfg)
        runs = [cfg.first_run(i) for i in range(sum(cfg.sections))]
        return [kv_cache(cfg.num_key_value_heads, cfg.head_dim, cfg.window_of(r)) for r in runs]

    def logits(self, op, hidden):
        return self.lm_head(op, hidden, self.embedding_table())


class DoryRules(ConfigRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return FULL if (index + 1) % 4 == 0 else SLIDING

    def rope(self, r: ConfigReader, head_dim: int):
        return parse_rope(r.raw, head_dim=head_dim) if FULL in self._types(r) else None

    def local_rope(self, r: ConfigReader, head_dim: int):
        return parse_local_rope(r.raw, head_dim=head_dim)

    def _types(self, r: ConfigReader) -> list:
        types = r.raw.get("layer_types")
        if isinstance(types, list):
            return types
        return [self.layer_type(r, i, None) for i in range(r.int("num_hidden_layers"))]

    def read(self, r: ConfigReader) -> DoryConfig:
        raw = dict(r.raw)
        types = raw.get("layer_types")
        if isinstance(types, list) and "mlp" in types:  # as transformers reads it
            raw["layer_types"] = types[::2]
            for key in _DOUBLED:
                if raw.get(key) is not None:
                    raw[key] = r.int(key, lo=0) // 2
        r = ConfigReader(raw, r.model_type)
        cfg = super().read(r)
        n_in = r.int("n_input_layers", default=8, lo=0)
        n_out = r.int("n_output_layers", default=8, lo=0)
        layers = cfg.num_hidden_layers
        n_rec = r.int("n_recurrent_layers", default=max(layers - n_in - n_out, 0), lo=0)
        if n_in + n_rec + n_out != layers:
            r.refuse("n_recurrent_layers", f"input + recurrent + output layers must be {layers}")
        mode = r.str("recurrent_kv_cache_mode", default="per_loop")
        if mode not in ("per_loop", "last_loop"):
            r.refuse("recurrent_kv_cache_mode", "Dory caches per loop or for the last loop")
        loops = r.int("n_recurrent_loops", default=2)
        recurrent = list(range(n_in, n_in + n_rec))
        runs = (*range(n_in), *recurrent * loops, *range(n_in + n_rec, layers))
        fields = vars(cfg) | {
            "num_hidden_layers": len(runs),
            "layer_types": tuple(cfg.layer_types[i] for i in runs),
        }
        return DoryConfig(
            **fields,
            runs=runs,
            sections=(n_in, n_rec, n_out),
            loops=loops,
            last_loop_cache=mode == "last_loop",
            initializer_range=r.float("initializer_range", default=0.0177),
            alpha_init=r.float("ngpt_alpha_init", default=0.05),
        )


FAMILIES = [
    Family(
        "dory",
        DoryLM,
        "nGPT (unit-norm states, interpolating residuals, learned scales), recurrent layers "
        "run in loops (a cache per loop, or the last loop's), sliding and full attention",
        rules=DoryRules(),
    ),
]
