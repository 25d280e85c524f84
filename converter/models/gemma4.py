"""Gemma 4 (text): Gemma 3's layout with norms that hold the scale itself, attention scale 1,
a weightless norm on v, full-attention layers with their own head size and kv heads (keys as
values with `attention_k_eq_v`) and a proportional rope, the last `num_kv_shared_layers` layers
attending to the keys and values of the last earlier layer of their type (no cache of their
own), per-layer token embeddings (PLE) mixed into each layer, and a learned scalar per layer.
Gemma 4 Unified's text model is the same without PLE."""

from __future__ import annotations

import dataclasses
import math

import onnx_ir as ir
from onnxscript import nn

from converter.components import Embedding, GatedMLP, Linear, RMSNorm, activation
from converter.components.cache import LayerCache
from converter.components.linear import PackedLinear
from converter.components.norms import per_head
from converter.config import (
    FULL,
    SLIDING,
    ArchitectureConfig,
    ConfigReader,
    ConfigRules,
    Rope,
    parse_rope,
)
from converter.config.reader import MAX_VOCAB
from converter.errors import ConfigError, MobiusError
from converter.execution_providers import (
    GQA,
    PACKED_GATE_UP,
    PACKED_QKV,
    SKIP_NORM,
    ExecutionProvider,
)
from converter.models.decoder import (
    AttentionKernelChoice,
    DecoderLM,
    attention_spec,
    layer_caches,
)
from converter.registry import Family
from converter.tasks.text_generation import DecoderInputs

# transformers' Gemma4TextConfig: the ropes of a config without rope_parameters, and the head
# size of full-attention layers when config.json names neither per_layer_config nor this
DEFAULT_ROPE = {
    SLIDING: {"rope_type": "default", "rope_theta": 10_000.0},
    FULL: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0},
}
DEFAULT_GLOBAL_HEAD_DIM = 512
_PER_LAYER_KEYS = {"head_dim", "num_key_value_heads"}


@dataclasses.dataclass(frozen=True)
class Gemma4Config(ArchitectureConfig):
    kv_sources: tuple[int | None, ...] = ()  # the layer whose keys/values each attends (None: own)
    keys_as_values: bool = False  # full-attention layers use their keys as values
    per_layer_input_size: int = 0  # PLE width per layer (0: no per-layer inputs)
    per_layer_vocab_size: int = 0
    double_wide_mlp: bool = False  # layers that share key/values have twice the MLP width


class Gemma4Rules(ConfigRules):
    per_layer_inputs = True  # Gemma 4 Unified has none

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return None  # per layer type, with that type's head size: see read()

    def attention_scale(self, r: ConfigReader, head_dim: int) -> float:
        return 1.0  # q and k are normed

    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return SLIDING if (index + 1) % 6 else FULL

    def attention_windows(self, r: ConfigReader, layers: int) -> tuple[int | None, tuple[str, ...]]:
        window, layer_types = super().attention_windows(r, layers)
        return window, (*layer_types[:-1], FULL)  # transformers forces the last layer to full

    def read(self, r: ConfigReader) -> Gemma4Config:
        if r.raw.get("use_bidirectional_attention") == "all":
            r.refuse("use_bidirectional_attention", "attention over all tokens is not causal")
        if self.per_layer_inputs and r.bool("enable_moe_block", False):
            r.refuse("enable_moe_block", "mixture-of-experts blocks are the next wave (issue 11)")
        cfg = super().read(r)
        head_dims, kv_heads = self._layer_shapes(r, cfg)
        ropes = {
            kind: self._rope(r, kind, head_dims[cfg.layer_types.index(kind)])
            for kind in set(cfg.layer_types)
        }
        ple = r.int("hidden_size_per_layer_input", default=0, lo=0) if self.per_layer_inputs else 0
        base = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
        return Gemma4Config(
            **base
            | {
                "layer_head_dims": head_dims,
                "layer_kv_heads": kv_heads,
                "rope": ropes.get(FULL),
                "local_rope": ropes.get(SLIDING),
                "layer_ropes": tuple(ropes[kind] for kind in cfg.layer_types),
            },
            kv_sources=kv_sources(r, cfg.layer_types),
            keys_as_values=r.bool("attention_k_eq_v", False),
            per_layer_input_size=ple,
            per_layer_vocab_size=r.int("vocab_size_per_layer_input", hi=MAX_VOCAB) if ple else 0,
            double_wide_mlp=r.bool("use_double_wide_mlp", False),
        )

    def _layer_shapes(self, r: ConfigReader, cfg: ArchitectureConfig):
        """(head size, kv heads) of each layer: per_layer_config's overrides, else transformers'
        rule (full-attention layers: global_head_dim, and num_global_key_value_heads when keys
        are values)."""
        overrides = r.raw.get("per_layer_config")
        if overrides is None:
            full = {"head_dim": r.int("global_head_dim", default=DEFAULT_GLOBAL_HEAD_DIM)}
            if r.bool("attention_k_eq_v", False) and r.has("num_global_key_value_heads"):
                full["num_key_value_heads"] = r.int("num_global_key_value_heads")
            overrides = {str(i): full for i, t in enumerate(cfg.layer_types) if t == FULL}
        if not isinstance(overrides, dict):
            raise ConfigError("'per_layer_config' must map layer indices to settings")
        overrides = {str(i): layer for i, layer in overrides.items()}
        head_dims, kv_heads = [], []
        for i in range(cfg.num_hidden_layers):
            layer = overrides.get(str(i), {})
            if not isinstance(layer, dict) or set(layer) - _PER_LAYER_KEYS - {"skip"}:
                r.refuse("per_layer_config", f"layer {i}: only head_dim and kv heads may differ")
            if layer.get("skip"):
                r.refuse("per_layer_config", f"layer {i} skips sub-layers")
            head_dims.append(layer.get("head_dim", cfg.head_dim))
            kv_heads.append(layer.get("num_key_value_heads", cfg.num_key_value_heads))
        for name, values in (("head_dim", head_dims), ("num_key_value_heads", kv_heads)):
            if not all(isinstance(v, int) and 0 < v <= 1 << 16 for v in values):
                raise ConfigError(f"'per_layer_config': '{name}' must be a positive integer")
        if any(cfg.num_attention_heads % k for k in kv_heads):
            raise ConfigError("'per_layer_config': kv heads must divide the attention heads")
        return tuple(head_dims), tuple(kv_heads)

    def _rope(self, r: ConfigReader, kind: str, head_dim: int) -> Rope:
        # only the per-layer-type entries count: transformers reads no top-level rope key here
        params = r.raw.get("rope_parameters") or DEFAULT_ROPE
        max_positions = r.raw.get("max_position_embeddings")
        raw = {"rope_parameters": params, "max_position_embeddings": max_positions}
        rope = parse_rope(raw, head_dim=head_dim, layer_type=kind)
        if rope.kind == "default":  # Gemma 4's default rope rotates the whole head
            rope = dataclasses.replace(rope, dim=head_dim)
        return rope


def kv_sources(
    r: ConfigReader, layer_types: tuple[str, ...], shared_default: int = 0
) -> tuple[int | None, ...]:
    """transformers' kv_sharing_modes (Gemma 3n's and 4's): from layer L - num_kv_shared_layers
    on, each layer reuses the keys/values of the last earlier layer of its attention type."""
    layers = len(layer_types)
    shared = r.int("num_kv_shared_layers", default=shared_default, lo=0, hi=layers)
    first_shared = layers - shared
    sources: list[int | None] = [None] * first_shared
    for i in range(first_shared, layers):
        owners = [j for j in range(first_shared) if layer_types[j] == layer_types[i]]
        if not owners:
            r.refuse(
                "num_kv_shared_layers",
                f"layer {i} would reuse keys/values no earlier {layer_types[i]} layer computes",
            )
        sources.append(owners[-1])
    return tuple(sources)


class Gemma4Attention(nn.Module):
    """q (and, unless it reuses another layer's, k and v) projected and normed per head; the
    kernel rotates q and k."""

    def __init__(self, cfg: Gemma4Config, index: int, dtype: ir.DataType, packed: bool):
        super().__init__()
        self.spec = spec = attention_spec(cfg, index)
        d, hidden = spec.head_dim, cfg.hidden_size
        parts = [("q_proj", spec.heads * d)]
        if cfg.kv_sources[index] is None:
            parts.append(("k_proj", spec.kv_heads * d))
            if not (cfg.keys_as_values and cfg.layer_types[index] == FULL):
                parts.append(("v_proj", spec.kv_heads * d))
            self.k_norm = RMSNorm(d, cfg.norm_eps, dtype)
            self.v_norm = RMSNorm(d, cfg.norm_eps, dtype, affine=False)
        self.qkv = PackedLinear(parts, hidden, cfg.qkv_bias, dtype, packed and len(parts) > 1)
        self.q_norm = RMSNorm(d, cfg.norm_eps, dtype)
        self.o_proj = Linear(spec.heads * d, hidden, cfg.o_bias, dtype)

    def forward(self, op, x, kernel, past_key, past_value, shared=None):
        """Also returns what the kernel attended (k, v and their past), for the layers that
        reuse them: the same k, v and past give those layers the same keys and values."""
        d = self.spec.head_dim
        q, *kv = self.qkv(op, x)
        q = per_head(op, self.q_norm, q, d)
        if shared is None:
            key = per_head(op, self.k_norm, kv[0], d)
            value = per_head(op, self.v_norm, kv[-1], d)  # k itself when keys are values
            shared = (key, value, past_key, past_value)
        y, present_key, present_value = kernel(op, q, *shared, self.spec)
        return self.o_proj(op, y), present_key, present_value, shared


class Gemma4Layer(nn.Module):
    def __init__(self, cfg: Gemma4Config, index: int, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.self_attn = Gemma4Attention(cfg, index, dtype, ep.has(PACKED_QKV))
        wide = cfg.double_wide_mlp and cfg.kv_sources[index] is not None
        mlp_cfg = dataclasses.replace(cfg, intermediate_size=cfg.intermediate_size * (1 + wide))
        self.mlp = GatedMLP(mlp_cfg, dtype, packed=ep.has(PACKED_GATE_UP))
        for name in (
            "input_layernorm",
            "post_attention_layernorm",
            "pre_feedforward_layernorm",
            "post_feedforward_layernorm",
        ):
            setattr(self, name, RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype))
        self.act, size = cfg.activation, cfg.per_layer_input_size
        if size:
            self.per_layer_input_gate = Linear(cfg.hidden_size, size, False, dtype)
            self.per_layer_projection = Linear(size, cfg.hidden_size, False, dtype)
            self.post_per_layer_input_norm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.layer_scalar = nn.Parameter([1], dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # only the norm before the MLP reads a residual sum: the layer's output is scaled
        return {"skip_norms": 1} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value, shared, per_layer_input):
        h = self.input_layernorm(op, x)
        a, key, value, shared = self.self_attn(op, h, kernel, past_key, past_value, shared)
        x = op.Add(x, self.post_attention_layernorm(op, a))
        m = self.mlp(op, self.pre_feedforward_layernorm(op, x))
        x = op.Add(x, self.post_feedforward_layernorm(op, m))
        if per_layer_input is not None:
            gate = activation(op, self.act, self.per_layer_input_gate(op, x))
            h = self.per_layer_projection(op, op.Mul(gate, per_layer_input))
            x = op.Add(x, self.post_per_layer_input_norm(op, h))
        return op.Mul(x, self.layer_scalar), key, value, shared


class Gemma4Body(nn.Module):
    def __init__(self, cfg: Gemma4Config, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.cfg = cfg
        self.kernel = AttentionKernelChoice(cfg, ep, dtype)
        self.embed_tokens = Embedding(
            cfg.vocab_size, cfg.hidden_size, dtype, scale=cfg.embedding_multiplier
        )
        layers, size = cfg.num_hidden_layers, cfg.per_layer_input_size
        if size:
            self.embed_tokens_per_layer = Embedding(
                cfg.per_layer_vocab_size, layers * size, dtype, scale=math.sqrt(size)
            )
            self.per_layer_model_projection = Linear(cfg.hidden_size, layers * size, False, dtype)
            self.per_layer_projection_norm = RMSNorm(size, cfg.norm_eps, dtype)
        self.layers = nn.ModuleList([Gemma4Layer(cfg, i, dtype, ep) for i in range(layers)])
        self.norm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    @property
    def embedding(self) -> Embedding:
        return self.embed_tokens

    def expected_fusions(self, plan) -> dict[str, int]:
        # the final norm reads the last layer's scaled output, not a sum
        return {GQA: len(self.layers) if self.kernel.gqa else 0} if plan.has(GQA) else {}

    def _per_layer_inputs(self, op, ids, embeddings):
        """[batch, sequence, layers, size]: the token's per-layer embedding plus a projection of
        its embedding, normed, averaged with a 1/sqrt(2) scale."""
        shape = [0, 0, self.cfg.num_hidden_layers, self.cfg.per_layer_input_size]
        tokens = op.Reshape(self.embed_tokens_per_layer(op, ids), shape)
        projected = op.Mul(
            self.per_layer_model_projection(op, embeddings), self.cfg.hidden_size**-0.5
        )
        projected = self.per_layer_projection_norm(op, op.Reshape(projected, shape))
        return op.Mul(op.Add(projected, tokens), 2**-0.5)

    def forward(self, op, inputs: DecoderInputs):
        if inputs.embedded and self.cfg.per_layer_input_size:
            raise MobiusError("Gemma 4's per-layer embeddings are looked up by input_ids")
        x = self.embed_tokens(op, inputs.tokens, inputs.embedded)
        kernel = self.kernel.make(op, inputs.tokens, inputs.attention_mask, inputs.position_ids)
        per_layer = None
        if self.cfg.per_layer_input_size:
            per_layer = self._per_layer_inputs(op, inputs.tokens, x)
        presents, attended = [], {}
        for i, layer in enumerate(self.layers):
            source = self.cfg.kv_sources[i]
            past_key, past_value = inputs.past[i] if source is None else (None, None)
            layer_input = None if per_layer is None else op.Gather(per_layer, i, axis=2)
            x, key, value, attended[i] = layer(
                op, x, kernel, past_key, past_value, attended.get(source), layer_input
            )
            if source is None:
                presents.append((key, value))
        return self.norm(op, x), presents


class Gemma4LM(DecoderLM):
    body_cls = Gemma4Body

    def caches(self) -> list[LayerCache]:
        """Layers that reuse another's keys and values (`kv_sources`) keep no cache."""
        caches = layer_caches(self.cfg)
        return [c for c, source in zip(caches, self.cfg.kv_sources, strict=True) if source is None]


class Gemma4UnifiedRules(Gemma4Rules):
    per_layer_inputs = False


_GEMMA4 = {"embed_scale_sqrt": True, "layout": "sandwich", "qk_norm": "head"}
FAMILIES = [
    Family(
        "gemma4_text",
        Gemma4LM,
        "per-layer embeddings, key/values shared across the last layers, full-attention layers "
        "with their own head size and proportional rope, v norm, layer scalars",
        ("google/gemma-4-E2B-it",),
        rules=Gemma4Rules(**_GEMMA4),
    ),
    Family(
        "gemma4_unified_text",
        Gemma4LM,
        "Gemma 4 text without per-layer embeddings",
        ("google/gemma-4-12B-it",),
        rules=Gemma4UnifiedRules(**_GEMMA4),
    ),
]
