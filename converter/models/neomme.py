"""NeoMME's text path: factorized token embeddings (vocab -> embedding_rank -> hidden) and a
scale-less RMSNorm, then pre-norm layers that each mix the running state with those normed
embeddings (`lambdas`), attend bidirectionally with grouped key/value heads, scale-less q/k
norms, rotary positions per layer type (full layers rotate a fraction of each head at their own
base), value embeddings added to the values of the first and last full layer, exclusive
self-attention (each head's output loses tanh(alpha) of its component along the token's own
value) and a sigmoid-gated output projection; the MLP is relu², both residual branches scaled by
`residual_multiplier`; a scale-less final norm. Sliding layers see keys at most their window
away (`per_layer_config` gives some layers a window of their own). The masked-LM head runs the
factorization backwards (`unembedding_projection`, then `lm_head`), tied to both embedding
weights under tie_word_embeddings; NeoMMEForRetrieval converts as feature-extraction with its
outputs beside last_hidden_state (NeoMMEModel below).

Images are not read: the graph takes no pixel_values and no two-axis position_ids, so the patch
stem is left unread and every token is at its index (what transformers computes for text)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, RMSNorm, activation
from converter.components.attention import Rotary
from converter.components.encoder_attention import encoder_attention
from converter.config import FULL, SLIDING, Rope, parse_rope
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertEncoderModel, Table
from converter.models.eurobert import repeat_heads
from converter.models.modernbert import window_bias
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs

# transformers' per-layer-type defaults where rope_parameters leaves a setting out
DEFAULT_THETA = {FULL: 1_000_000.0, SLIDING: 10_000.0}
DEFAULT_PARTIAL_ROTARY = {FULL: 0.25, SLIDING: 1.0}
LONG_WINDOW = 1024  # every other sliding layer's window when per_layer_config is not saved
NORMALIZE_EPS = 1e-12  # torch.nn.functional.normalize's floor on the norm


@dataclass(frozen=True)
class NeoMMEConfig(EncoderConfig):
    kv_heads: int = 1
    embedding_rank: int = 1
    attention_bias: bool = False
    mlp_bias: bool = False
    full: tuple[bool, ...] = ()  # per layer: a full_attention layer
    windows: tuple[int | None, ...] = ()  # per layer: the sliding window (None: none)
    ropes: tuple[Rope, ...] = ()  # per layer
    residual_multiplier: float = 1.0
    tied: bool = True
    embedding_dim: int = 1  # the retrieval head's token embeddings


class NeoMMEEmbeddings(nn.Module):
    def __init__(self, cfg: NeoMMEConfig, dtype: ir.DataType):
        super().__init__()
        self.word_embeddings = Table(cfg.vocab_size, cfg.embedding_rank, dtype)
        self.embedding_projection = Linear(cfg.embedding_rank, cfg.hidden_size, False, dtype)

    def forward(self, op, input_ids):
        return self.embedding_projection(op, self.word_embeddings(op, input_ids))


def head_norm(op, x, heads: int, head_dim: int, norm: RMSNorm):
    """The scale-less RMSNorm over each head of x [batch, sequence, heads * head_dim]."""
    per_head = norm(op, op.Reshape(x, [0, 0, heads, head_dim]))
    return op.Reshape(per_head, [0, 0, heads * head_dim])


def unit(op, x):
    """x / max(|x|, eps) over the last axis (torch's F.normalize)."""
    return op.Div(x, op.Max(op.ReduceL2(x, [-1], keepdims=1), NORMALIZE_EPS))


class ExclusiveSelfAttention(nn.Module):
    """Each head's output minus tanh(alpha[head]) times its projection on the token's own
    (unit) value."""

    def __init__(self, cfg: NeoMMEConfig, dtype: ir.DataType):
        super().__init__()
        self.alpha = nn.Parameter([cfg.num_attention_heads], dtype)
        self.heads, self.head_dim = cfg.num_attention_heads, cfg.head_dim

    def forward(self, op, out, values):
        shape = [0, 0, self.heads, self.head_dim]
        out, direction = op.Reshape(out, shape), unit(op, op.Reshape(values, shape))
        along = op.ReduceSum(op.Mul(out, direction), [-1], keepdims=1)
        scale = op.Unsqueeze(op.Tanh(self.alpha), [1])  # [heads, 1]
        out = op.Sub(out, op.Mul(op.Mul(scale, along), direction))
        return op.Reshape(out, [0, 0, self.heads * self.head_dim])


class SigmoidGatedProjection(nn.Module):
    def __init__(self, cfg: NeoMMEConfig, dtype: ir.DataType):
        super().__init__()
        width = cfg.num_attention_heads * cfg.head_dim
        self.gate_proj = Linear(cfg.hidden_size, width, False, dtype)
        self.o_proj = Linear(width, cfg.hidden_size, cfg.attention_bias, dtype)

    def forward(self, op, out, x):
        return self.o_proj(op, op.Mul(out, op.Sigmoid(self.gate_proj(op, x))))


class NeoMMEAttention(nn.Module):
    def __init__(self, cfg: NeoMMEConfig, dtype: ir.DataType, index: int):
        super().__init__()
        size, bias, dim = cfg.hidden_size, cfg.attention_bias, cfg.head_dim
        self.heads, self.kv_heads, self.head_dim = cfg.num_attention_heads, cfg.kv_heads, dim
        self.q_proj = Linear(size, self.heads * dim, bias, dtype)
        self.k_proj = Linear(size, self.kv_heads * dim, bias, dtype)
        self.v_proj = Linear(size, self.kv_heads * dim, bias, dtype)
        self.norm = RMSNorm(dim, cfg.norm_eps, dtype, affine=False)  # q_norm and k_norm
        self.exclusive_self_attention = ExclusiveSelfAttention(cfg, dtype)
        self.output_projection = SigmoidGatedProjection(cfg, dtype)
        self.rope, self.scale = cfg.ropes[index], dim**-0.5

    def forward(self, op, x, kernel, rotary, bias, value_embeds):
        heads, kv_heads, dim = self.heads, self.kv_heads, self.head_dim
        q = head_norm(op, self.q_proj(op, x), heads, dim, self.norm)
        k = head_norm(op, self.k_proj(op, x), kv_heads, dim, self.norm)
        q, k = rotary(op, q, heads, self.rope), rotary(op, k, kv_heads, self.rope)
        v = self.v_proj(op, x)
        if value_embeds is not None:
            v = op.Add(v, value_embeds)
        k = repeat_heads(op, k, kv_heads, heads, dim)
        v = repeat_heads(op, v, kv_heads, heads, dim)
        out = kernel(op, q, k, v, heads, self.scale, bias)
        return self.output_projection(op, self.exclusive_self_attention(op, out, v), x)


class ReluSquaredMLP(nn.Module):
    def __init__(self, cfg: NeoMMEConfig, dtype: ir.DataType):
        super().__init__()
        self.up_proj = Linear(cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias, dtype)
        self.down_proj = Linear(cfg.intermediate_size, cfg.hidden_size, cfg.mlp_bias, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.down_proj(op, activation(op, self.act, self.up_proj(op, x)))


class NeoMMEEncoderLayer(nn.Module):
    def __init__(self, cfg: NeoMMEConfig, dtype: ir.DataType, index: int):
        super().__init__()
        self.lambdas = nn.Parameter([2], dtype)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype, affine=False)
        self.self_attn = NeoMMEAttention(cfg, dtype, index)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype, affine=False)
        self.mlp = ReluSquaredMLP(cfg, dtype)
        self.residual = cfg.residual_multiplier

    def expected_fusions(self, plan) -> dict[str, int]:
        # both norms read a sum: the mixed states, the attention residual
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, initial, kernel, rotary, bias, value_embeds):
        first, second = op.Gather(self.lambdas, 0), op.Gather(self.lambdas, 1)
        mixed = op.Add(op.Mul(first, x), op.Mul(second, initial))
        h = self.input_layernorm(op, mixed)
        attended = self.self_attn(op, h, kernel, rotary, bias, value_embeds)
        x = op.Add(x, op.Mul(attended, self.residual))
        h = self.mlp(op, self.post_attention_layernorm(op, x))
        return op.Add(x, op.Mul(h, self.residual))


class NeoMMEBody(nn.Module):
    """`embed_tokens`, `embedding_norm`, `value_embeddings`, the layers, `final_norm`."""

    def __init__(self, cfg: NeoMMEConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embed_tokens = NeoMMEEmbeddings(cfg, dtype)
        self.embedding_norm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype, affine=False)
        self.value_embeddings = Table(cfg.vocab_size, cfg.kv_heads * cfg.head_dim, dtype)
        self.layers = nn.ModuleList(
            [NeoMMEEncoderLayer(cfg, dtype, i) for i in range(cfg.num_hidden_layers)]
        )
        self.final_norm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype, affine=False)
        full = [i for i, is_full in enumerate(cfg.full) if is_full]
        self.value_layers = {full[0], full[-1]}
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}  # the final norm reads a sum

    def forward(self, op, inputs: TextInputs):
        ids = inputs.input_ids
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        length = op.Squeeze(op.Shape(ids, start=1, end=2), [0])
        rotary = Rotary(
            self.dtype, op.Expand(op.Unsqueeze(op.Range(0, length, 1), [0]), op.Shape(ids))
        )
        biases = {w: window_bias(op, ids, w, self.dtype) for w in set(self.cfg.windows) - {None}}
        values = self.value_embeddings(op, ids)
        x = initial = self.embedding_norm(op, self.embed_tokens(op, ids))
        for i, (layer, window) in enumerate(zip(self.layers, self.cfg.windows, strict=True)):
            extra = values if i in self.value_layers else None
            x = layer(op, x, initial, kernel, rotary, biases.get(window), extra)
        return self.final_norm(op, x), None


class FloatLinear(Linear):
    """The embedding projection when the tied head also multiplies by it, untransposed: kept
    float in int4 and int8 builds, whose passes quantize a weight once, in one layout."""

    keeps_float = True

    def expected_fusions(self, plan) -> dict[str, int]:
        return {}


class Unembedding(nn.Module):
    """hidden -> embedding_rank by a weight shaped as the embedding projection's, [hidden,
    rank] (transformers multiplies by it untransposed)."""

    def __init__(self, cfg: NeoMMEConfig, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([cfg.hidden_size, cfg.embedding_rank], dtype)

    def forward(self, op, x):
        return op.MatMul(x, self.weight)


class MultiVectorHead(nn.Module):
    """The retrieval head's token embeddings: projected, unit length, zero on padding."""

    def __init__(self, cfg: NeoMMEConfig, dtype: ir.DataType):
        super().__init__()
        self.proj = Linear(cfg.hidden_size, cfg.embedding_dim, False, dtype)

    def forward(self, op, hidden, keep):
        zero = op.CastLike(0.0, hidden)
        return op.Where(keep, unit(op, self.proj(op, hidden)), zero)


class NeoMMEModel(BertEncoderModel):
    """feature-extraction: last_hidden_state; a retrieval checkpoint (NeoMMEForRetrieval, its
    `multi_vector_head` stored) adds its outputs: `embeddings` [batch, sequence, embedding_dim]
    and `dense_embeddings` [batch, hidden], the unit mean of the unpadded tokens over the
    whole width (a Matryoshka prefix, dense_dim, is the caller's to cut and renormalize)."""

    body_cls = NeoMMEBody
    body_name = "model"
    heads = ("feature-extraction", "fill-mask")
    head_tasks: ClassVar[dict[str, str]] = {"ForRetrieval": "feature-extraction"}
    reference_heads: ClassVar[tuple[str, ...]] = ("NeoMMEForRetrieval",)

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return False

    def make_head(self, cfg: NeoMMEConfig, dtype, task: str, tensors) -> None:
        if task == "feature-extraction" and "multi_vector_head.proj.weight" in tensors:
            self.multi_vector_head = MultiVectorHead(cfg, dtype)
        if task == "fill-mask" and cfg.tied:
            rank, size = cfg.embedding_rank, cfg.hidden_size
            self.body.embed_tokens.embedding_projection = FloatLinear(rank, size, False, dtype)
        if task == "fill-mask" and not cfg.tied:
            self.unembedding_projection = Unembedding(cfg, dtype)
            self.lm_head = Linear(cfg.embedding_rank, cfg.vocab_size, False, dtype, head=True)

    def forward(self, op, inputs: TextInputs) -> dict:
        hidden, _ = self.body(op, inputs)
        cfg, tokens = self.cfg, [BATCH, SEQUENCE]
        if self.task == "feature-extraction":
            return self.features(op, hidden, inputs.attention_mask)
        embeddings = self.body.embed_tokens
        if cfg.tied:  # both factors of the token embedding, run backwards
            x = op.MatMul(hidden, embeddings.embedding_projection.weight)
            logits = op.MatMul(x, op.Transpose(embeddings.word_embeddings.weight, perm=[1, 0]))
        else:
            logits = self.lm_head(op, self.unembedding_projection(op, hidden))
        return {"logits": (logits, [*tokens, cfg.vocab_size])}

    def features(self, op, hidden, attention_mask) -> dict:
        cfg, tokens = self.cfg, [BATCH, SEQUENCE]
        out = {"last_hidden_state": (hidden, [*tokens, cfg.hidden_size])}
        if getattr(self, "multi_vector_head", None) is None:
            return out
        kept = op.Unsqueeze(op.Cast(attention_mask, to=ir.DataType.BOOL), [2])
        vectors = self.multi_vector_head(op, hidden, kept)
        out["embeddings"] = (vectors, [*tokens, cfg.embedding_dim])
        # the mean of the unpadded tokens (a row without any: zeros), at unit length
        keep = op.Cast(kept, to=self.body.dtype)
        total = op.ReduceSum(op.Mul(hidden, keep), [1], keepdims=0)
        count = op.Max(op.ReduceSum(keep, [1], keepdims=0), op.CastLike(1e-9, hidden))
        out["dense_embeddings"] = (unit(op, op.Div(total, count)), [BATCH, cfg.hidden_size])
        return out


class NeoMMERules(EncoderRules):
    def __init__(self):
        super().__init__(aliases={"norm_eps": "layer_norm_eps"}, token_types=False)

    def select(self, raw: dict) -> dict:
        """The file's own top-level rope_theta moved into each layer type's rope settings that
        lack one, as transformers moves it (before the defaults fill in the rest)."""
        theta, given = raw.get("rope_theta"), raw.get("rope_parameters") or {}
        if theta is None or not isinstance(given, dict) or set(given) - {FULL, SLIDING}:
            return raw
        if not all(isinstance(v, dict | None) for v in given.values()):
            return raw
        folded = {t: {"rope_theta": theta, **(given.get(t) or {})} for t in (FULL, SLIDING)}
        return {**raw, "rope_parameters": folded}

    def read(self, r: ConfigReader) -> NeoMMEConfig:
        base = super().read(r)
        heads, layers = base.num_attention_heads, base.num_hidden_layers
        head_dim = r.int("head_dim")
        kv_heads = r.int("num_key_value_heads", default=heads)
        if heads % kv_heads:
            r.refuse("num_key_value_heads", f"it must divide num_attention_heads ({heads})")
        types = _layer_types(r, layers)
        multiplier = r.raw.get("residual_multiplier")
        return NeoMMEConfig(
            **{f.name: getattr(base, f.name) for f in fields(EncoderConfig)}
            | {"head_dim": head_dim},
            kv_heads=kv_heads,
            embedding_rank=r.int("embedding_rank"),
            attention_bias=r.bool("attention_bias", False),
            mlp_bias=r.bool("mlp_bias", False),
            full=tuple(t == FULL for t in types),
            windows=_windows(r, types),
            ropes=_ropes(r, types, head_dim),
            residual_multiplier=(
                (2 * layers) ** -0.5 if multiplier is None else r.float("residual_multiplier")
            ),
            tied=r.bool("tie_word_embeddings", True),
            embedding_dim=r.int("embedding_dim"),
        )


def _layer_types(r: ConfigReader, layers: int) -> tuple[str, ...]:
    """Every sixth layer and the last one full unless `layer_types` says (transformers)."""
    types = r.raw.get("layer_types")
    if types is None:
        return tuple(
            FULL if (i + 1) % 6 == 0 or i == layers - 1 else SLIDING for i in range(layers)
        )
    if not isinstance(types, list) or len(types) != layers or set(types) - {FULL, SLIDING}:
        raise ConfigError(
            f"'layer_types' must name {FULL} or {SLIDING} for each of the {layers} layers"
        )
    if FULL not in types:
        r.refuse("layer_types", "NeoMME needs at least one full_attention layer")
    return tuple(types)


def _windows(r: ConfigReader, types: tuple[str, ...]) -> tuple[int | None, ...]:
    """Each layer's sliding window (None: none): `sliding_window`, unless per_layer_config
    gives the layer its own (the mask follows it, whatever the layer's type); without
    per_layer_config transformers gives full layers none and every other sliding layer the long
    window."""
    window = r.int("sliding_window", hi=1 << 24) if r.has("sliding_window") else None
    per_layer = r.raw.get("per_layer_config")
    if per_layer is None:
        sliding = [i for i, t in enumerate(types) if t == SLIDING]
        per_layer = {str(i): {"sliding_window": LONG_WINDOW} for i in sliding[1::2]}
        per_layer |= {str(i): {"sliding_window": None} for i, t in enumerate(types) if t == FULL}
    if not isinstance(per_layer, dict):
        raise ConfigError("'per_layer_config' must map layer indices to settings")
    windows: list[int | None] = [window] * len(types)
    for key, settings in per_layer.items():
        index = int(key) if isinstance(key, str) and key.isdigit() else -1
        if not 0 <= index < len(types) or not isinstance(settings, dict):
            raise ConfigError(f"'per_layer_config' key {key!r} must be a layer index")
        if set(settings) - {"sliding_window"}:
            r.refuse("per_layer_config", "only a layer's sliding_window may differ here")
        own = settings.get("sliding_window")
        if own is not None and (isinstance(own, bool) or not isinstance(own, int) or own <= 0):
            raise ConfigError(f"'per_layer_config.{key}.sliding_window' = {own!r}: not a window")
        windows[index] = own
    return tuple(windows)


def _ropes(r: ConfigReader, types: tuple[str, ...], head_dim: int) -> tuple[Rope, ...]:
    """Each layer type's rope from rope_parameters[type], its settings defaulting as
    transformers' NeoMME defaults them."""
    given = r.raw.get("rope_parameters") or {}
    if not isinstance(given, dict) or set(given) - {FULL, SLIDING}:
        r.refuse("rope_parameters", "NeoMME's rope_parameters are per layer type")
    ropes = {}
    for layer_type in set(types):
        params = given.get(layer_type) or {}
        if not isinstance(params, dict):
            r.refuse("rope_parameters", f"the {layer_type} entry must be a mapping")
        params = dict(params)
        kind = params.get("rope_type", params.get("type", "default"))
        if kind != "default":
            r.refuse("rope_parameters", f"{layer_type} layers run the default rope only")
        params.setdefault("rope_theta", DEFAULT_THETA[layer_type])
        params.setdefault("partial_rotary_factor", DEFAULT_PARTIAL_ROTARY[layer_type])
        raw = {
            "rope_parameters": {layer_type: params},
            "max_position_embeddings": r.int("max_position_embeddings"),
        }
        ropes[layer_type] = parse_rope(raw, head_dim=head_dim, layer_type=layer_type)
    return tuple(ropes[t] for t in types)


FAMILIES = [
    Family(
        "neomme",
        NeoMMEModel,
        "factorized embeddings, exclusive self-attention, sigmoid-gated outputs, value "
        "embeddings, per-layer-type rotary and windows; text only (no pixel_values)",
        ("Hcompany/NeoMME-260M",),
        rules=NeoMMERules(),
        task="feature-extraction",
        category="encoder",
        prefix="model.",
        unused=(
            r"(model\.)?patch_embeddings\..*",  # the image stem: images are not read
            # a tied head's stored copies of the embedding factors
            r"lm_head\.weight",
            r"unembedding_projection\.weight",
        ),
    ),
]
