"""Rotary position embedding settings from config.json, and their inverse frequencies in numpy.

Reads both spellings found on the Hub: the older top-level ``rope_theta`` + ``rope_scaling``
(``type`` or ``rope_type``) and transformers 5 ``rope_parameters`` (flat, or nested per layer
type as Gemma 3 writes it). The formulas follow transformers 5.24 ``modeling_rope_utils``; like
it, the exponents ``2i / dim`` are rounded to float32 before the power is taken, so constants
baked from these arrays match what transformers computes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from converter.errors import ConfigError

KINDS = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")
_ALIASES = {"su": "longrope", "mrope": "default"}
FULL = "full_attention"
SLIDING = "sliding_attention"
_DEFAULT_THETA = 10000.0


@dataclass(frozen=True)
class Rope:
    """One rotary embedding, fully resolved: every default is already applied except yarn's and
    longrope's attention factor, which ``attention_scaling()`` derives."""

    kind: str
    theta: float
    dim: int
    max_position_embeddings: int
    factor: float = 1.0
    original_max_position_embeddings: int | None = None
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    beta_fast: float | None = None
    beta_slow: float | None = None
    mscale: float | None = None
    mscale_all_dim: float | None = None
    truncate: bool = True
    attention_factor: float | None = None
    short_factor: tuple[float, ...] | None = None
    long_factor: tuple[float, ...] | None = None
    # multimodal rope (Qwen2-VL): the frequencies split in sections, section i rotated by the
    # positions of row i % 3 of position_ids [3, batch, sequence]
    mrope_section: tuple[int, ...] | None = None
    # Qwen3-VL's interleaved layout: frequency i takes row 1 (height) or 2 (width) where
    # i % 3 says so within the first 3 x section frequencies of that row, else row 0 (time)
    mrope_interleaved: bool = False
    # how pairs rotate: (i, i + dim/2) or, interleaved, (2i, 2i + 1) (GPT-J, ERNIE 4.5)
    interleaved: bool = False
    reverse: bool = False  # rotates by minus the angle (NanoChat's rotate_half flips signs)
    # proportional (Gemma 4): all `dim` rotate, only the first `rotated_pairs` at a frequency
    rotated_pairs: int | None = None

    def _exponents(self) -> np.ndarray:
        """``2i / dim`` for i < dim // 2, rounded to float32 as transformers does, held in f64."""
        steps = np.arange(0, self.dim, 2, dtype=np.float32) / np.float32(self.dim)
        return steps.astype(np.float64)

    def _default(self, theta: float) -> np.ndarray:
        return 1.0 / theta ** self._exponents()

    def inv_freq(self, *, long: bool = False) -> np.ndarray:
        """float32 [dim // 2]; ``long=True`` (longrope only) uses ``long_factor``."""
        if long and self.kind != "longrope":
            raise ValueError(f"long=True needs a longrope rope, not {self.kind!r}")
        base = self._default(self.theta)
        if self.kind == "linear":
            out = base / self.factor
        elif self.kind == "yarn":
            out = self._yarn(base)
        elif self.kind == "longrope":
            ext = self.long_factor if long else self.short_factor
            out = base / np.asarray(ext, dtype=np.float64)
        elif self.kind == "llama3":
            out = self._llama3(base)
        elif self.kind == "proportional":
            out = np.where(np.arange(self.dim // 2) < self.rotated_pairs, base, 0.0) / self.factor
        else:  # default, and dynamic before the sequence outgrows max_position_embeddings
            out = base
        return out.astype(np.float32)

    def _yarn(self, base: np.ndarray) -> np.ndarray:
        assert self.original_max_position_embeddings is not None
        assert self.beta_fast is not None and self.beta_slow is not None
        orig = self.original_max_position_embeddings

        def correction_dim(rotations: float) -> float:
            turns = math.log(orig / (rotations * 2 * math.pi))
            return self.dim * turns / (2 * math.log(self.theta))

        low, high = correction_dim(self.beta_fast), correction_dim(self.beta_slow)
        if self.truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, self.dim - 1)
        if low == high:
            high += 0.001  # transformers' guard against a zero-width ramp
        ramp = np.clip((np.arange(self.dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
        extrapolation = 1.0 - ramp  # weight of the unscaled frequency
        return (base / self.factor) * ramp + base * extrapolation

    def _llama3(self, base: np.ndarray) -> np.ndarray:
        assert self.original_max_position_embeddings is not None
        assert self.low_freq_factor is not None and self.high_freq_factor is not None
        orig, low_f, high_f = (
            self.original_max_position_embeddings,
            self.low_freq_factor,
            self.high_freq_factor,
        )
        wavelen = 2 * math.pi / base
        long_wave = wavelen > orig / low_f
        short_wave = wavelen < orig / high_f
        smooth = (orig / wavelen - low_f) / (high_f - low_f)
        smoothed = (1 - smooth) * base / self.factor + smooth * base
        return np.where(long_wave, base / self.factor, np.where(short_wave, base, smoothed))

    def attention_scaling(self) -> float:
        """Multiplier transformers applies to cos and sin."""
        if self.kind == "yarn":
            if self.attention_factor is not None:
                return self.attention_factor
            if self.mscale and self.mscale_all_dim:  # truthiness, as transformers tests it
                return _yarn_mscale(self.factor, self.mscale) / _yarn_mscale(
                    self.factor, self.mscale_all_dim
                )
            return _yarn_mscale(self.factor, 1.0)
        if self.kind == "longrope":
            if self.attention_factor is not None:
                return self.attention_factor
            assert self.original_max_position_embeddings is not None
            if self.factor <= 1.0:
                return 1.0
            return math.sqrt(
                1 + math.log(self.factor) / math.log(self.original_max_position_embeddings)
            )
        return 1.0

    def dynamic_inv_freq(self, seq_len: int) -> np.ndarray:
        """Dynamic NTK inverse frequencies for ``seq_len`` (= max position id + 1):

        L = max(seq_len, max_position_embeddings)
        base = theta * (factor * L / max_position_embeddings - (factor - 1)) ** (dim / (dim - 2))
        inv_freq[i] = 1 / base ** (2i / dim)

        At L == max_position_embeddings this is ``inv_freq()``. Other kinds return ``inv_freq()``.
        """
        if self.kind != "dynamic":
            return self.inv_freq()
        length = max(seq_len, self.max_position_embeddings)
        scale = self.factor * length / self.max_position_embeddings - (self.factor - 1)
        theta = self.theta * scale ** (self.dim / (self.dim - 2))
        return self._default(theta).astype(np.float32)


def _yarn_mscale(scale: float, mscale: float) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


# --- parsing -------------------------------------------------------------------------------


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{key} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{key} must be finite, got {value!r}")
    return float(value)


def _positive(value: Any, key: str) -> float:
    number = _number(value, key)
    if number <= 0:
        raise ConfigError(f"{key} must be positive, got {value!r}")
    return number


def _positive_int(value: Any, key: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{key} must be a positive integer, got {value!r}")
    return value


def _optional(params: dict, key: str, where: str) -> float | None:
    value = params.get(key)
    return None if value is None else _number(value, f"{where}.{key}")


def _factors(params: dict, key: str, where: str, length: int) -> tuple[float, ...]:
    values = params.get(key)
    name = f"{where}.{key}"
    if not isinstance(values, list | tuple):
        raise ConfigError(f"{name} must be a list of numbers, got {values!r}")
    if len(values) != length:
        raise ConfigError(f"{name} must have dim // 2 = {length} entries, got {len(values)}")
    return tuple(_positive(v, f"{name}[{i}]") for i, v in enumerate(values))


def _source(raw: dict) -> tuple[dict, str]:
    """The rope dict and its key name; like transformers, a non-empty rope_scaling wins."""
    key = "rope_scaling" if raw.get("rope_scaling") else "rope_parameters"
    value = raw.get(key)
    if value is None:
        return {}, key
    if not isinstance(value, dict):
        raise ConfigError(f"{key} must be a mapping, got {type(value).__name__}")
    return value, key


def _is_nested(source: dict, raw: dict) -> bool:
    layer_types = raw.get("layer_types")
    names = {FULL, SLIDING} | (set(layer_types) if isinstance(layer_types, list) else set())
    return any(isinstance(v, dict) or k in names for k, v in source.items())


def _kind(params: dict, where: str, yarn_is_longrope: bool) -> str:
    key = "rope_type" if params.get("rope_type") is not None else "type"
    value = params.get(key, "default")
    if value is None:
        value = "default"
    if not isinstance(value, str):
        raise ConfigError(f"{where}.{key} must be a string, got {value!r}")
    if value == "yarn" and yarn_is_longrope:
        return "longrope"
    kind = _ALIASES.get(value, value)
    if kind not in KINDS:
        raise ConfigError(f"{where}.{key}: unknown rope type {value!r} (known: {', '.join(KINDS)})")
    return kind


def _theta(params: dict, where: str, fallbacks: dict[str, Any]) -> float:
    """rope_theta inside the rope dict wins, then the first top-level fallback present."""
    candidates = {f"{where}.rope_theta": params.get("rope_theta"), **fallbacks}
    for key, value in candidates.items():
        if value is not None:
            return _positive(value, key)
    return _DEFAULT_THETA


def _rotary_dim(params: dict, where: str, raw: dict, head_dim: int) -> int:
    head_dim = _positive_int(head_dim, "head_dim")
    candidates = {
        f"{where}.partial_rotary_factor": params.get("partial_rotary_factor"),
        "partial_rotary_factor": raw.get("partial_rotary_factor"),
        "rotary_pct": raw.get("rotary_pct"),  # GPT-NeoX spelling
    }
    key, fraction = "head_dim", 1.0
    for name, value in candidates.items():
        if value is not None:
            key, fraction = name, _positive(value, name)
            if fraction > 1:
                raise ConfigError(f"{name} must be in (0, 1], got {value!r}")
            break
    dim = int(head_dim * fraction)
    if dim <= 0 or dim % 2:
        raise ConfigError(f"{key}: rotary dim int({head_dim} * {fraction}) = {dim} is odd or 0")
    return dim


def _build(
    raw: dict,
    params: dict,
    where: str,
    nested: bool,
    head_dim: int,
    thetas: dict[str, Any],
    yarn_is_longrope: bool = False,
) -> Rope:
    kind = _kind(params, where, yarn_is_longrope)
    theta = _theta(params, where, thetas)
    dim = _rotary_dim(params, where, raw, head_dim)
    if kind == "proportional":  # the whole head rotates, the pairs past `dim` at frequency 0
        dim, rotated_pairs = head_dim, dim // 2
    max_key = "max_position_embeddings"
    if max_key not in raw and "n_positions" in raw:
        max_key = "n_positions"  # GPT-2-era spelling
    max_pos = _positive_int(raw.get(max_key), max_key)
    out: dict[str, Any] = dict(kind=kind, theta=theta, dim=dim, max_position_embeddings=max_pos)
    if kind == "proportional":
        out["rotated_pairs"] = rotated_pairs

    # transformers lets a top-level original_max_position_embeddings (Phi-3) override the rope
    # dict's for flat configs; nested ones read only their own entry.
    orig_key, orig = f"{where}.original_max_position_embeddings", None
    if not nested and raw.get("original_max_position_embeddings") is not None:
        orig_key = "original_max_position_embeddings"
        orig = _positive_int(raw[orig_key], orig_key)
    elif params.get("original_max_position_embeddings") is not None:
        orig = _positive_int(params["original_max_position_embeddings"], orig_key)
    if kind in ("yarn", "longrope") and orig is None:
        orig = max_pos  # transformers' default
    if kind == "llama3" and orig is None:
        raise ConfigError(f"{orig_key} is required for llama3 rope")
    out["original_max_position_embeddings"] = orig

    factor_key = f"{where}.factor"
    if kind == "proportional" and params.get("factor") is not None:
        out["factor"] = _positive(params["factor"], factor_key)
    if kind in ("linear", "dynamic", "llama3"):
        if params.get("factor") is None:
            raise ConfigError(f"{factor_key} is required for {kind} rope")
        out["factor"] = _positive(params["factor"], factor_key)
    elif kind == "yarn":
        if "factor" not in params:
            raise ConfigError(f"{factor_key} is required for yarn rope")
        # an explicit null means "max_position_embeddings / original" (DeepSeek-V3 style)
        value = params["factor"]
        out["factor"] = max_pos / orig if value is None else _positive(value, factor_key)
    elif kind == "longrope":
        value = params.get("factor")
        out["factor"] = max_pos / orig if value is None else _positive(value, factor_key)

    if kind == "dynamic" and dim <= 2:
        raise ConfigError(f"head_dim: dynamic rope needs a rotary dim > 2, got {dim}")
    if kind == "llama3":
        for key in ("low_freq_factor", "high_freq_factor"):
            if params.get(key) is None:
                raise ConfigError(f"{where}.{key} is required for llama3 rope")
            out[key] = _positive(params[key], f"{where}.{key}")
        if out["high_freq_factor"] <= out["low_freq_factor"]:
            raise ConfigError(f"{where}.high_freq_factor must exceed {where}.low_freq_factor")
    if kind == "yarn":
        beta_fast = _optional(params, "beta_fast", where)
        beta_slow = _optional(params, "beta_slow", where)
        out["beta_fast"] = beta_fast or 32.0  # `or`: transformers also replaces a 0
        out["beta_slow"] = beta_slow or 1.0
        out["mscale"] = _optional(params, "mscale", where)
        out["mscale_all_dim"] = _optional(params, "mscale_all_dim", where)
        truncate = params.get("truncate", True)
        if not isinstance(truncate, bool):
            raise ConfigError(f"{where}.truncate must be true or false, got {truncate!r}")
        # transformers 5.24 reads truncate from the top of rope_parameters, so a nested
        # per-layer-type entry's own value is never seen there: it always truncates.
        out["truncate"] = truncate or nested
    if kind in ("yarn", "longrope") and params.get("attention_factor") is not None:
        out["attention_factor"] = _positive(params["attention_factor"], f"{where}.attention_factor")
    if kind == "longrope":
        out["short_factor"] = _factors(params, "short_factor", where, dim // 2)
        out["long_factor"] = _factors(params, "long_factor", where, dim // 2)
    if params.get("mrope_section") is not None:
        out["mrope_section"] = _sections(params["mrope_section"], f"{where}.mrope_section", dim)
    return Rope(**out)


def _sections(value: Any, key: str, dim: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value
    ):
        raise ConfigError(f"{key} must list positive integers, got {value!r}")
    if sum(value) != dim // 2:
        raise ConfigError(f"{key} = {value} must sum to rotary dim / 2 = {dim // 2}")
    return tuple(value)


def parse_rope(
    raw: dict, *, head_dim: int, layer_type: str | None = None, yarn_is_longrope: bool = False
) -> Rope:
    """The rope of ``layer_type`` (default "full_attention") from a whole config.json dict.
    ``yarn_is_longrope``: the family reads an old "yarn" type as longrope (Phi-3 does)."""
    if layer_type == SLIDING:
        local = parse_local_rope(raw, head_dim=head_dim)
        if local is not None:
            return local
    source, where = _source(raw)
    nested = _is_nested(source, raw)
    params = source
    if nested:
        layer = layer_type or FULL
        where = f"{where}.{layer}"
        params = source.get(layer)
        if not isinstance(params, dict):
            raise ConfigError(f"{where}: no rope settings for layer type {layer!r}")
    thetas = {"rope_theta": raw.get("rope_theta"), "rotary_emb_base": raw.get("rotary_emb_base")}
    return _build(raw, params, where, nested, head_dim, thetas, yarn_is_longrope)


def parse_local_rope(raw: dict, *, head_dim: int) -> Rope | None:
    """Gemma 3's sliding-window rope, or None when the config has no separate local rope."""
    source, where = _source(raw)
    local_theta = {"rope_local_base_freq": raw.get("rope_local_base_freq")}
    if _is_nested(source, raw) and isinstance(source.get(SLIDING), dict):
        return _build(raw, source[SLIDING], f"{where}.{SLIDING}", True, head_dim, local_theta)
    if raw.get("rope_local_base_freq") is None:
        return None
    # Old style: rope_scaling belongs to the global layers; local layers use plain rope.
    return _build(raw, {}, "rope_local_base_freq", False, head_dim, local_theta)
