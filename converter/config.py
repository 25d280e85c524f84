"""ArchitectureConfig: one normalized view of a Hub config.json.

Everything downstream reads this dataclass, never the raw dict. Family facts that
config.json does not spell out (Qwen2 always has q/k/v biases, Gemma scales its
embeddings, ...) live in `_FAMILY_TRAITS`, so a family that is "llama with a twist"
is a switch here rather than a copy of a model file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from converter.errors import ConfigError
from converter.rope import Rope, parse_local_rope, parse_rope

# Sanity bounds checked before anything is allocated from these numbers.
_MAX_DIM = 1 << 17
_MAX_LAYERS = 1024
_MAX_VOCAB = 1 << 22
_MAX_POSITIONS = 1 << 24

FULL = "full_attention"
SLIDING = "sliding_attention"

# layout: how norms sit around the blocks of a layer.
#   pre       x + attn(norm(x)); x + mlp(norm(x))                      (llama)
#   sandwich  x + post(attn(pre(x))); x + post(mlp(pre(x)))            (gemma2/3)
#   post      x + norm(attn(x)); x + norm(mlp(x))                      (olmo2)
#   parallel  x + attn(norm(x)) + mlp(norm(x))                         (phi)
_FAMILY_TRAITS: dict[str, dict[str, Any]] = {
    "llama": {},
    "mistral": {},
    "granite": {},
    "qwen2": {"qkv_bias": True, "o_bias": False},
    "qwen3": {"qk_norm": "head"},
    "phi3": {"fused_qkv": True, "fused_gate_up": True},
    "gemma": {"norm_offset": 1.0, "embed_scale_sqrt": True, "tied": True},
    "gemma2": {"norm_offset": 1.0, "embed_scale_sqrt": True, "layout": "sandwich", "tied": True},
    "gemma3_text": {
        "tied": True,
        "norm_offset": 1.0,
        "embed_scale_sqrt": True,
        "layout": "sandwich",
        "qk_norm": "head",
    },
    "olmo2": {"layout": "post", "qk_norm": "full"},
    "phi": {
        "layout": "parallel",
        "norm_type": "layer",
        "qkv_bias": True,
        "o_bias": True,
        "mlp_bias": True,
    },
    "gpt2": {
        "norm_type": "layer",
        "qkv_bias": True,
        "o_bias": True,
        "mlp_bias": True,
        "tied": True,
    },
}


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
    norm_type: str  # "rms" | "layer"
    norm_eps: float
    norm_offset: float  # Gemma stores RMSNorm weights as w - 1
    layout: str  # pre | sandwich | post | parallel
    # blocks
    activation: str
    fused_qkv: bool
    fused_gate_up: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    qk_norm: str | None  # None | "head" (per head_dim) | "full" (whole projection)
    # positions and attention
    rope: Rope | None  # None: learned absolute positions (gpt2)
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

    @classmethod
    def from_hf(cls, config: dict[str, Any]) -> ArchitectureConfig:
        """Normalize a config.json dict (descending into `text_config` when present)."""
        return _Reader(_text_config(config), model_type_of(config)).build()


def _text_config(config: Any) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise ConfigError("config.json must hold a JSON object")
    raw = config.get("text_config") or config
    if not isinstance(raw, dict):
        raise ConfigError("'text_config' must be a JSON object")
    return raw


def model_type_of(config: Any) -> str:
    """The architecture name a config.json declares (of its text model, if nested)."""
    model_type = _text_config(config).get("model_type") or config.get("model_type")
    if model_type is None or model_type == "":
        raise ConfigError("'model_type' is missing from config.json")
    if not isinstance(model_type, str):
        raise ConfigError(f"'model_type' must be a string, got {model_type!r}")
    return model_type


class _Reader:
    """Reads keys from the raw dict with type and range checks naming the key."""

    def __init__(self, raw: dict[str, Any], model_type: str) -> None:
        self.raw = raw
        self.model_type = model_type
        self.traits = _FAMILY_TRAITS.get(model_type, {})

    def get(self, *keys: str, default: Any = None) -> Any:
        for key in keys:
            if self.raw.get(key) is not None:
                return self.raw[key]
        return default

    def int(self, *keys: str, default: int | None = None, lo: int = 1, hi: int = _MAX_DIM) -> int:
        value = self.get(*keys, default=default)
        if value is None:
            raise ConfigError(f"'{keys[0]}' is missing from config.json")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"'{keys[0]}' must be an integer, got {value!r}")
        if not lo <= value <= hi:
            raise ConfigError(f"'{keys[0]}' = {value} is outside the sane range [{lo}, {hi}]")
        return value

    def float(self, *keys: str, default: float | None = None, positive: bool = True) -> float:
        value = self.get(*keys, default=default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"'{keys[0]}' must be a number, got {value!r}")
        if not math.isfinite(value) or (positive and value <= 0):
            raise ConfigError(f"'{keys[0]}' = {value} must be a finite positive number")
        return float(value)

    def optional_float(self, key: str) -> float | None:
        return None if self.raw.get(key) is None else self.float(key)

    def bool(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(f"'{key}' must be true or false, got {value!r}")
        return value

    def token_ids(self, key: str) -> tuple[int, ...]:
        value = self.raw.get(key)
        values = value if isinstance(value, list) else [] if value is None else [value]
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"'{key}' must hold non-negative token ids, got {value!r}")
        return tuple(values)

    def build(self) -> ArchitectureConfig:
        traits = self.traits
        hidden = self.int("hidden_size", "n_embd", "d_model")
        heads = self.int("num_attention_heads", "n_head")
        kv_heads = self.int("num_key_value_heads", "num_kv_heads", default=heads)
        if heads % kv_heads:
            raise ConfigError(
                f"'num_key_value_heads' = {kv_heads} must divide 'num_attention_heads' = {heads}"
            )
        head_dim = self.get("head_dim")
        if head_dim is None:
            if hidden % heads:
                raise ConfigError(
                    f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = "
                    f"{heads}; set 'head_dim'"
                )
            head_dim = hidden // heads
        else:
            head_dim = self.int("head_dim")
        layers = self.int("num_hidden_layers", "n_layer", hi=_MAX_LAYERS)
        vocab = self.int("vocab_size", hi=_MAX_VOCAB)
        inner = self.int("intermediate_size", "n_inner", default=4 * hidden, hi=_MAX_DIM * 4)
        max_pos = self.int("max_position_embeddings", "n_positions", hi=_MAX_POSITIONS)
        # layer_types first: the rope parser reads it to spot per-layer-type rope settings.
        sliding_window, layer_types = self.attention_windows(layers)
        rope_raw = self.raw
        if self.model_type == "gemma3_text":
            rope_raw = {"rope_theta": 1_000_000.0, **self.raw}  # Gemma 3's global default base
        rope = None if self.model_type == "gpt2" else parse_rope(rope_raw, head_dim=head_dim)
        local_rope = None
        if self.model_type == "gemma3_text":
            # Gemma 3's sliding layers default to a plain rope with base 10000.
            local_rope = parse_local_rope(self.raw, head_dim=head_dim) or Rope(
                "default", 10_000.0, rope.dim, rope.max_position_embeddings
            )
        norm_type = traits.get("norm_type", "rms")
        eps = self.float(
            "rms_norm_eps" if norm_type == "rms" else "layer_norm_eps",
            "layer_norm_epsilon",
            "norm_eps",
            default=1e-6 if norm_type == "rms" else 1e-5,
        )
        attention_bias = self.bool("attention_bias", default=False)
        activation = self.get("hidden_activation", "hidden_act", "activation_function")
        if not isinstance(activation, str):
            raise ConfigError(f"'hidden_act' must name an activation, got {activation!r}")
        if activation == "gelu" and self.model_type.startswith("gemma"):
            activation = "gelu_pytorch_tanh"  # legacy Gemma configs mean the tanh approximation
        embedding_multiplier = self.float("embedding_multiplier", default=1.0)
        if traits.get("embed_scale_sqrt"):
            embedding_multiplier = math.sqrt(hidden)
        qk_norm = traits.get("qk_norm")
        if self.model_type == "phi" and self.bool("qk_layernorm", default=False):
            qk_norm = "head"
        return ArchitectureConfig(
            model_type=self.model_type,
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
            activation=activation,
            fused_qkv=traits.get("fused_qkv", False),
            fused_gate_up=traits.get("fused_gate_up", False),
            qkv_bias=traits.get("qkv_bias", attention_bias),
            o_bias=traits.get("o_bias", attention_bias),
            mlp_bias=traits.get("mlp_bias", self.bool("mlp_bias", default=False)),
            qk_norm=qk_norm,
            rope=rope,
            local_rope=local_rope,
            sliding_window=sliding_window,
            layer_types=layer_types,
            attention_scale=self.attention_scale(head_dim),
            scale_by_inverse_layer=self.bool("scale_attn_by_inverse_layer_idx", default=False),
            attn_logit_softcap=self.optional_float("attn_logit_softcapping"),
            final_logit_softcap=self.optional_float("final_logit_softcapping"),
            embedding_multiplier=embedding_multiplier,
            residual_multiplier=self.float("residual_multiplier", default=1.0),
            logits_multiplier=1.0 / self.float("logits_scaling", default=1.0),
            tie_word_embeddings=self.bool("tie_word_embeddings", traits.get("tied", False)),
            bos_token_id=next(iter(self.token_ids("bos_token_id")), None),
            eos_token_id=self.token_ids("eos_token_id"),
            pad_token_id=next(iter(self.token_ids("pad_token_id")), None),
        )

    def attention_scale(self, head_dim: int) -> float:
        if self.raw.get("attention_multiplier") is not None:
            return self.float("attention_multiplier")
        if self.raw.get("query_pre_attn_scalar") is not None:
            return self.float("query_pre_attn_scalar") ** -0.5
        if not self.bool("scale_attn_weights", default=True):
            return 1.0
        return head_dim**-0.5

    def attention_windows(self, layers: int) -> tuple[int | None, tuple[str, ...]]:
        """Sliding window size and the per-layer attention type."""
        window = self.raw.get("sliding_window")
        if self.model_type in ("qwen2", "qwen3") and not self.bool("use_sliding_window", False):
            window = None
        if window is not None:
            window = self.int("sliding_window", hi=_MAX_POSITIONS)
        layer_types = self.raw.get("layer_types")
        if layer_types is None:
            layer_types = [self.default_layer_type(i, window) for i in range(layers)]
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

    def default_layer_type(self, i: int, window: int | None) -> str:
        if window is None:
            return FULL
        if self.model_type == "gemma2":
            return SLIDING if (i + 1) % 2 else FULL
        if self.model_type == "gemma3_text":
            pattern = self.int("sliding_window_pattern", default=6)
            return SLIDING if (i + 1) % pattern else FULL
        if self.model_type in ("qwen2", "qwen3"):
            return SLIDING if i >= self.int("max_window_layers", default=0, lo=0) else FULL
        return SLIDING
