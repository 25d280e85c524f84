"""Olive's `quantization_config` (`"quant_method": "olive"`): one model-wide setting (`bits`,
`symmetric`, `group_size`) for every projection Olive quantized, and `overrides` keyed by exact
source names giving each MoE layer's fused expert projections
(`model.layers.<i>.mlp.experts.gate_up_proj` and `...down_proj`) their own.

mobius binds the model-wide setting as INT4 MatMulNBits and the expert projections as QMoE
inputs, both straight from the packed bytes (converter/olive_weights.py); settings it cannot bind
that way are refused here, by key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from converter.errors import ConfigError

OLIVE = "olive"
MODEL_WIDE_BITS = 4  # what MatMulNBits binds for the non-expert projections
EXPERT_BITS = (2, 3, 4, 8)
LINEAR_BLOCK_SIZES = (16, 32, 64, 128)
EXPERT_PROJECTION = re.compile(r"model\.layers\.(\d+)\.mlp\.experts\.(gate_up_proj|down_proj)")
_OVERRIDE_KEYS = ("bits", "symmetric", "group_size")


@dataclass(frozen=True)
class Projection:
    """How one projection's weights were quantized: codes of `bits` bits, blocks of
    `block_size` values along K, each with a scale (and a zero point unless `symmetric`)."""

    bits: int
    symmetric: bool
    block_size: int


@dataclass(frozen=True)
class OliveQuantization:
    model_wide: Projection
    overrides: tuple[tuple[str, Projection], ...] = ()

    def projection(self, name: str) -> Projection:
        """The setting of source projection `name` (its override, else the model-wide one)."""
        return dict(self.overrides).get(name, self.model_wide)


def read_olive(raw: dict) -> OliveQuantization | None:
    """The Olive settings of a config.json (None: it has no Olive `quantization_config`)."""
    section = raw.get("quantization_config")
    if not isinstance(section, dict) or section.get("quant_method") != OLIVE:
        return None
    model_wide = _projection(section, "quantization_config")
    if model_wide.bits != MODEL_WIDE_BITS:
        raise ConfigError(
            f"quantization_config.bits = {model_wide.bits}: mobius binds an Olive checkpoint's "
            f"non-expert projections as INT{MODEL_WIDE_BITS} MatMulNBits only; give other widths "
            "to the expert projections through 'overrides'"
        )
    if model_wide.block_size not in LINEAR_BLOCK_SIZES:
        raise ConfigError(
            f"quantization_config.group_size = {model_wide.block_size}: the model-wide INT4 "
            f"projections need blocks of {', '.join(map(str, LINEAR_BLOCK_SIZES))} (MatMulNBits)"
        )
    for key in ("lm_head", "embeds"):
        if section.get(key):
            raise ConfigError(
                f"quantization_config.{key} = true: mobius binds quantized projections inside "
                "the layers only; keep the embeddings and the LM head float"
            )
    overrides = section.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise ConfigError("quantization_config.overrides must be an object of source names")
    return OliveQuantization(
        model_wide,
        tuple((name, _override(name, value, section)) for name, value in overrides.items()),
    )


def _override(name: str, value, section: dict) -> Projection:
    where = f"quantization_config.overrides[{name!r}]"
    if not EXPERT_PROJECTION.fullmatch(name):
        raise ConfigError(
            f"{where}: only the fused expert projections "
            "(model.layers.<i>.mlp.experts.gate_up_proj / down_proj, exact names, no 're:' "
            "patterns) may be overridden; keep non-expert projections at the model-wide INT4"
        )
    if not isinstance(value, dict) or set(value) - set(_OVERRIDE_KEYS):
        raise ConfigError(f"{where} must be an object of {', '.join(_OVERRIDE_KEYS)}")
    merged = {key: value.get(key, section.get(key)) for key in _OVERRIDE_KEYS}
    projection = _projection(merged, where)
    if projection.bits not in EXPERT_BITS:
        raise ConfigError(
            f"{where}.bits = {projection.bits}: expert projections take "
            f"{', '.join(map(str, EXPERT_BITS))} bits"
        )
    if projection.bits == 3 and not projection.symmetric:
        raise ConfigError(
            f"{where}: INT3 projections must be symmetric (codes offset by 4, no zero points)"
        )
    return projection


def _projection(section: dict, where: str) -> Projection:
    bits, symmetric, group = (section.get(key) for key in _OVERRIDE_KEYS)
    if not isinstance(bits, int) or isinstance(bits, bool):
        raise ConfigError(f"{where}.bits must be an integer, got {bits!r}")
    if not isinstance(symmetric, bool):
        raise ConfigError(f"{where}.symmetric must be true or false, got {symmetric!r}")
    if not isinstance(group, int) or isinstance(group, bool) or group <= 0:
        raise ConfigError(
            f"{where}.group_size must be a positive block size (per-channel and per-tensor "
            f"Olive layouts are not bound), got {group!r}"
        )
    return Projection(bits, symmetric, group)
