"""Multi-head latent attention settings (DeepSeek-V2/V3, MiniCPM3, GLM-4-MoE-Lite).

Keys and values come from one low-rank latent per token (`kv_lora_rank` wide, normed) plus a
rotary key part (`qk_rope_head_dim`) that all heads share; queries come from `q_proj`, or from
a low-rank `q_a_proj` -> norm -> `q_b_proj` when `q_lora_rank` is set. Each head's query/key
is `qk_nope_head_dim + qk_rope_head_dim` wide, its value `v_head_dim`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from converter.config.architecture import ArchitectureConfig, ConfigRules, extend
from converter.config.reader import ConfigReader
from converter.config.rope import Rope
from converter.errors import ConfigError

# how the rotary part's pairs are laid out:
#   halves        (i, i + dim/2), rotate_half                                  (MiniCPM3)
#   interleaved   (2i, 2i + 1), rotated in place (a complex product)           (DeepSeek-V2)
#   deinterleaved (2i, 2i + 1), written back as [evens, odds]  (DeepSeek-V3 `rope_interleave`)
ROPE_LAYOUTS = ("halves", "interleaved", "deinterleaved")


@dataclass(frozen=True)
class MLA:
    q_lora_rank: int | None  # None: a plain q_proj
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    deinterleave: bool = False  # the rotary part arrives as pairs, leaves as [evens, odds]
    # transformers builds the latent norms with RMSNorm's default eps, not rms_norm_eps
    latent_norm_eps: float = 1e-6

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def cache_width(self) -> int:
        """The width of the cached key and of the cached value: half a token's latent row."""
        return (self.kv_lora_rank + self.qk_rope_head_dim) // 2


@dataclass(frozen=True)
class MLAConfig(ArchitectureConfig):
    """An ArchitectureConfig whose attention is latent (head_dim is the rotary part's width,
    as transformers sets it)."""

    mla: MLA | None = None


def read_mla(r: ConfigReader, hidden: int, heads: int, deinterleave: bool = False) -> MLA:
    """The MLA keys of a config.json, each checked by name; `v_head_dim` defaults to
    hidden / heads (MiniCPM3's default; DeepSeek's configs always set it)."""
    q_lora = r.int("q_lora_rank") if r.has("q_lora_rank") else None
    rope_dim = _rope_dim(r)
    rank = r.int("kv_lora_rank")
    if rank % 2:
        raise ConfigError(
            f"'kv_lora_rank' = {rank} must be even: the latent row is cached as two halves"
        )
    return MLA(
        q_lora_rank=q_lora,
        kv_lora_rank=rank,
        qk_nope_head_dim=r.int("qk_nope_head_dim"),
        qk_rope_head_dim=rope_dim,
        v_head_dim=r.int("v_head_dim", default=hidden // heads),
        deinterleave=deinterleave,
    )


def _rope_dim(r: ConfigReader) -> int:
    rope_dim = r.int("qk_rope_head_dim")
    if rope_dim % 2:
        raise ConfigError(f"'qk_rope_head_dim' = {rope_dim} must be even (rotary pairs)")
    return rope_dim


def mla_scale(r: ConfigReader, mla: MLA, rope: Rope | None) -> float:
    """1/sqrt(qk_head_dim), times yarn's mscale squared when the rope (of any scaled kind, as
    transformers tests it) names `mscale_all_dim`."""
    scale = mla.qk_head_dim**-0.5
    params = r.get("rope_scaling", "rope_parameters", default={})
    mscale_all_dim = params.get("mscale_all_dim") if isinstance(params, dict) else None
    if rope is None or rope.kind == "default" or not mscale_all_dim:
        return scale
    if isinstance(mscale_all_dim, bool) or not isinstance(mscale_all_dim, int | float):
        raise ConfigError(f"rope mscale_all_dim must be a number, got {mscale_all_dim!r}")
    if rope.factor > 1:
        scale *= (0.1 * mscale_all_dim * math.log(rope.factor) + 1.0) ** 2
    return scale


class MLARules(ConfigRules):
    """The generic reading plus the MLA keys, as an `MLAConfig` (a family with more settings
    of its own gives its subclass as `config_cls`). `rope_layout` is one of ROPE_LAYOUTS, or
    None: the config's `rope_interleave` chooses (true: deinterleaved, as DeepSeek-V3 and
    GLM-4-MoE-Lite read it; false: halves)."""

    config_cls: type[MLAConfig] = MLAConfig

    def __init__(self, aliases=None, rope_layout: str | None = "halves", **traits) -> None:
        if rope_layout is not None and rope_layout not in ROPE_LAYOUTS:
            raise ValueError(f"rope_layout must be one of {ROPE_LAYOUTS}, not {rope_layout!r}")
        super().__init__(aliases, **traits)
        self._rope_layout = rope_layout

    def rope_layout(self, r: ConfigReader) -> str:
        if self._rope_layout is not None:
            return self._rope_layout
        return "deinterleaved" if r.bool("rope_interleave", True) else "halves"

    def head_dim(self, r: ConfigReader, hidden: int, heads: int) -> int:
        return _rope_dim(r)  # transformers sets head_dim so, whatever config.json says

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        rope = super().rope(r, head_dim)
        if rope is not None and rope.dim != head_dim:
            raise ConfigError(
                f"'partial_rotary_factor': latent attention rotates all of qk_rope_head_dim "
                f"({head_dim}), not {rope.dim}"
            )
        if rope is not None and self.rope_layout(r) == "interleaved":
            rope = dataclasses.replace(rope, interleaved=True)
        return rope

    def read(self, r: ConfigReader) -> MLAConfig:
        cfg = super().read(r)
        if cfg.num_key_value_heads != cfg.num_attention_heads:
            r.refuse(
                "num_key_value_heads",
                "latent attention expands its one latent into every query head",
            )
        if cfg.sliding_window is not None:
            r.refuse("sliding_window", "latent attention layers attend to the whole sequence")
        layout = self.rope_layout(r)
        mla = read_mla(r, cfg.hidden_size, cfg.num_attention_heads, layout == "deinterleaved")
        return extend(cfg, self.config_cls, mla=mla, attention_scale=mla_scale(r, mla, cfg.rope))
