"""ArchitectureConfig: one normalized view of a Hub config.json, and the rules that read it.

Everything downstream reads this dataclass, never the raw dict. How a family reads its
config.json is its `ConfigRules`: fixed facts the file does not spell out (`traits`: Qwen2
always has q/k/v biases, Gemma scales its embeddings, ...) and the hooks a family overrides
(its windows, activations, rope). The rules live in the family's module (converter/models);
this module knows no family by name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from converter.config.alibi import Alibi
from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, ConfigReader
from converter.config.rope import FULL, SLIDING, Rope, parse_rope
from converter.errors import ConfigError

if TYPE_CHECKING:
    from converter.config.moe import MoeConfig

# layout: how norms sit around the blocks of a layer.
#   pre       x + attn(norm(x)); x + mlp(norm(x))                      (llama)
#   sandwich  x + post(attn(pre(x))); x + post(mlp(pre(x)))            (gemma2/3)
#   post      x + norm(attn(x)); x + norm(mlp(x))                      (olmo2)
#   parallel  x + attn(norm(x)) + mlp(norm(x))                         (phi)
#   post_residual  norm(x + attn(x)); norm(x + mlp(x))                 (gpt-1, opt-350m)
LAYOUTS = ("pre", "sandwich", "post", "parallel", "post_residual")


@dataclass(frozen=True)
class ArchitectureConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    max_position_embeddings: int
    # norms
    norm_type: str  # "rms" | "layer" | "layer_no_bias" (LayerNorm with a scale only)
    norm_eps: float
    norm_offset: float  # Gemma (RMSNorm) and Nemotron (LayerNorm) store scales as w - 1
    layout: str  # one of LAYOUTS
    # blocks
    activation: str
    fused_qkv: bool
    fused_gate_up: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    qk_norm: str | None  # None | "head" (per head_dim) | "full" (whole projection)
    # positions and attention
    rope: Rope | None  # None: no rotary embedding (e.g. learned absolute positions)
    local_rope: Rope | None  # rope of sliding layers when it differs (gemma3)
    sliding_window: int | None
    layer_types: tuple[str, ...]
    attention_scale: float
    scale_by_inverse_layer: bool  # GPT-2's scale_attn_by_inverse_layer_idx
    attn_logit_softcap: float | None
    final_logit_softcap: float | None
    # multipliers
    embedding_multiplier: float
    residual_multiplier: float
    logits_multiplier: float
    tie_word_embeddings: bool
    # special tokens
    bos_token_id: int | None
    eos_token_id: tuple[int, ...]
    pad_token_id: int | None
    # rows of an LM head pruned to the first ids of the vocabulary (None: vocab_size rows)
    output_vocab_size: int | None = None
    # twists a few families have (defaults: none)
    norm_affine: bool = True  # False: norms without weight or bias (OLMo, NanoChat, HRM)
    norm_bias: bool = True  # False: LayerNorms with a scale but no bias (Cohere, MPT)
    clip_qkv: float | None = None  # q, k, v (after any q/k norm) clamped to [-clip, clip]
    layer_ropes: tuple[Rope | None, ...] | None = None  # per-layer ropes, None: no rotary
    attention_sinks: bool = False  # a learned logit per head joins each softmax (`sinks`)
    # per-layer attention shapes where layers differ (Gemma 4's full-attention layers)
    layer_head_dims: tuple[int, ...] | None = None
    layer_kv_heads: tuple[int, ...] | None = None
    # ALiBi biases instead of (or besides) rotary positions; a family's rules set it
    alibi: Alibi | None = None
    moe: MoeConfig | None = None  # experts in place of the MLP (converter/config/moe.py)

    @classmethod
    def from_hf(cls, config: dict[str, Any]) -> ArchitectureConfig:
        """Normalize a config.json dict with its family's rules (`text_config` when nested)."""
        from converter.config.reader import model_type_of, text_config
        from converter.registry import family_for

        model_type = model_type_of(config)
        return family_for(model_type).rules.read(ConfigReader(text_config(config), model_type))

    @property
    def logits_size(self) -> int:
        """The width of the logits: the LM head's rows."""
        return self.output_vocab_size or self.vocab_size

    def rope_of(self, index: int) -> Rope | None:
        """The rotary embedding of layer `index` (sliding layers may have their own)."""
        if self.layer_ropes is not None:
            return self.layer_ropes[index]
        if self.layer_types[index] == SLIDING and self.local_rope is not None:
            return self.local_rope
        return self.rope

    def head_dim_of(self, index: int) -> int:
        return self.head_dim if self.layer_head_dims is None else self.layer_head_dims[index]

    def kv_heads_of(self, index: int) -> int:
        if self.layer_kv_heads is None:
            return self.num_key_value_heads
        return self.layer_kv_heads[index]

    def window_of(self, index: int) -> int | None:
        return self.sliding_window if self.layer_types[index] == SLIDING else None


class ConfigRules:
    """How one family reads config.json. The base reads the Llama layout; a family gives
    `traits` (keyword arguments: fixed facts its config.json does not state) and overrides the
    hooks that differ. Known traits: norm_type, norm_offset, layout, fused_qkv, fused_gate_up,
    qkv_bias, o_bias, mlp_bias, qk_norm, embed_scale_sqrt, rope (False: no rotary), norm_affine
    (False: norms without weight or bias), norm_bias (False: LayerNorms without bias).
    `aliases` maps other spellings of keys to the names read here, as a transformers
    configuration's `attribute_map` does (a spelling found in config.json wins)."""

    TRAITS = frozenset(
        {
            "norm_type",
            "norm_offset",
            "layout",
            "fused_qkv",
            "fused_gate_up",
            "qkv_bias",
            "o_bias",
            "mlp_bias",
            "qk_norm",
            "embed_scale_sqrt",
            "rope",
            "norm_affine",
            "norm_bias",
        }
    )

    def __init__(self, aliases: Mapping[str, str] | None = None, **traits: Any) -> None:
        unknown = set(traits) - self.TRAITS
        if unknown:
            raise TypeError(f"unknown config traits: {', '.join(sorted(unknown))}")
        self.traits: Mapping[str, Any] = traits
        self.aliases: Mapping[str, str] = aliases or {}

    # -- hooks a family overrides -----------------------------------------------------------
    def select(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The section of config.json this family reads: the text model's."""
        from converter.config.reader import text_config

        return text_config(raw)

    def sliding_window(self, r: ConfigReader) -> int | None:
        return r.raw.get("sliding_window")

    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        """The attention type of layer `index` when config.json has no `layer_types`."""
        return FULL if window is None else SLIDING

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return parse_rope(r.raw, head_dim=head_dim) if self.traits.get("rope", True) else None

    def local_rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return None

    def activation(self, r: ConfigReader) -> str:
        value = r.get("hidden_activation", "hidden_act", "activation_function")
        if not isinstance(value, str):
            raise ConfigError(f"'hidden_act' must name an activation, got {value!r}")
        return value

    def qk_norm(self, r: ConfigReader) -> str | None:
        return self.traits.get("qk_norm")

    def clip_qkv(self, r: ConfigReader) -> float | None:
        return r.optional_float("clip_qkv")

    def layer_ropes(
        self, r: ConfigReader, head_dim: int, layer_types: tuple[str, ...]
    ) -> tuple[Rope | None, ...] | None:
        """Each layer's rope (None: that layer rotates nothing, NoPE) when they differ by more
        than the sliding layers' local rope."""
        return None

    def max_positions(self, r: ConfigReader) -> int:
        return r.int("max_position_embeddings", "n_positions", "max_seq_len", hi=MAX_POSITIONS)

    # -- the generic reading -----------------------------------------------------------------
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        traits = self.traits
        for alias, key in self.aliases.items():
            if r.has(alias):
                r.raw[key] = r.raw[alias]
        hidden = r.int("hidden_size", "n_embd", "d_model")
        heads = r.int("num_attention_heads", "n_head", "n_heads")
        kv_heads = r.int("num_key_value_heads", "num_kv_heads", default=heads)
        if heads % kv_heads:
            raise ConfigError(
                f"'num_key_value_heads' = {kv_heads} must divide 'num_attention_heads' = {heads}"
            )
        head_dim = self.head_dim(r, hidden, heads)
        layers = r.int("num_hidden_layers", "n_layer", "n_layers", hi=MAX_LAYERS)
        vocab = r.int("vocab_size", hi=MAX_VOCAB)
        inner = r.int("intermediate_size", "n_inner", default=4 * hidden, hi=MAX_DIM * 4)
        max_pos = self.max_positions(r)
        # layer_types first: the rope parser reads it to spot per-layer-type rope settings.
        sliding_window, layer_types = self.attention_windows(r, layers)
        norm_type = traits.get("norm_type", "rms")
        eps = r.float(
            "rms_norm_eps" if norm_type == "rms" else "layer_norm_eps",
            "layer_norm_epsilon",
            "norm_eps",
            "norm_epsilon",
            default=1e-6 if norm_type == "rms" else 1e-5,
        )
        attention_bias = r.bool("attention_bias", default=False)
        embedding_multiplier = r.float("embedding_multiplier", default=1.0)
        if traits.get("embed_scale_sqrt"):
            embedding_multiplier = math.sqrt(hidden)
        return ArchitectureConfig(
            model_type=r.model_type,
            vocab_size=vocab,
            hidden_size=hidden,
            intermediate_size=inner,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            head_dim=head_dim,
            max_position_embeddings=max_pos,
            norm_type=norm_type,
            norm_eps=eps,
            norm_offset=traits.get("norm_offset", 0.0),
            layout=traits.get("layout", "pre"),
            activation=self.activation(r),
            fused_qkv=traits.get("fused_qkv", False),
            fused_gate_up=traits.get("fused_gate_up", False),
            qkv_bias=traits.get("qkv_bias", attention_bias),
            o_bias=traits.get("o_bias", attention_bias),
            mlp_bias=traits.get("mlp_bias", r.bool("mlp_bias", default=False)),
            qk_norm=self.qk_norm(r),
            rope=self.rope(r, head_dim),
            local_rope=self.local_rope(r, head_dim),
            sliding_window=sliding_window,
            layer_types=layer_types,
            attention_scale=self.attention_scale(r, head_dim),
            scale_by_inverse_layer=r.bool("scale_attn_by_inverse_layer_idx", default=False),
            attn_logit_softcap=r.optional_float("attn_logit_softcapping"),
            final_logit_softcap=r.optional_float("final_logit_softcapping"),
            embedding_multiplier=embedding_multiplier,
            residual_multiplier=r.float("residual_multiplier", default=1.0),
            logits_multiplier=1.0 / r.float("logits_scaling", default=1.0),
            tie_word_embeddings=r.bool("tie_word_embeddings", False),
            bos_token_id=next(iter(r.token_ids("bos_token_id", vocab)), None),
            eos_token_id=r.token_ids("eos_token_id", vocab),
            pad_token_id=next(iter(r.token_ids("pad_token_id", vocab)), None),
            norm_affine=traits.get("norm_affine", True),
            norm_bias=traits.get("norm_bias", True),
            clip_qkv=self.clip_qkv(r),
            layer_ropes=self.layer_ropes(r, head_dim, layer_types),
        )

    def head_dim(self, r: ConfigReader, hidden: int, heads: int) -> int:
        if r.has("head_dim"):
            return r.int("head_dim")
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = "
                f"{heads}; set 'head_dim'"
            )
        return hidden // heads

    def attention_scale(self, r: ConfigReader, head_dim: int) -> float:
        if r.has("attention_multiplier"):
            return r.float("attention_multiplier")
        if r.has("query_pre_attn_scalar"):
            return r.float("query_pre_attn_scalar") ** -0.5
        if not r.bool("scale_attn_weights", default=True):
            return 1.0
        return head_dim**-0.5

    def attention_windows(self, r: ConfigReader, layers: int) -> tuple[int | None, tuple[str, ...]]:
        """Sliding window size and the per-layer attention type."""
        window = self.sliding_window(r)
        if window is not None:
            window = r.int("sliding_window", hi=MAX_POSITIONS)
        layer_types = r.raw.get("layer_types")
        if layer_types is None:
            layer_types = [self.layer_type(r, i, window) for i in range(layers)]
        if not isinstance(layer_types, list) or len(layer_types) != layers:
            raise ConfigError(f"'layer_types' must list one entry per layer ({layers})")
        for kind in layer_types:
            if kind not in (FULL, SLIDING):
                raise ConfigError(f"'layer_types' holds unsupported attention type {kind!r}")
        if SLIDING in layer_types and window is None:
            raise ConfigError(
                "'layer_types' asks for sliding attention but 'sliding_window' is unset"
            )
        return window, tuple(layer_types)


class MultiHeadRules(ConfigRules):
    """A family with one key/value head per query head: like transformers, it ignores any
    num_key_value_heads in config.json."""

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        cfg = super().read(r)
        return replace(cfg, num_key_value_heads=cfg.num_attention_heads)


def extend(cfg: ArchitectureConfig, cls: type[ArchitectureConfig], **values: Any):
    """`cfg` as a family's subclass `cls` of ArchitectureConfig, with `values`: the subclass's
    own fields (OPT's word_embed_proj_dim) and generic ones the family reads its own way."""
    generic = {f.name: getattr(cfg, f.name) for f in fields(ArchitectureConfig)}
    return cls(**{**generic, **values})
