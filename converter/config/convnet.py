"""ConvNetConfig: what convolutional and hybrid image encoders (MobileNet, EfficientNet, BiT,
LeViT, CvT, PVT, ...) share in config.json, and the rules that read it. Their stages are built
from family formulas (depth multipliers, per-stage lists), so each family's rules read its own
settings into `extra` and say how wide the last features are (`hidden_size`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from converter.config.encoder import _num_labels
from converter.config.reader import ConfigReader
from converter.config.vision import MAX_IMAGE_SIDE, MAX_STAGES, check_int, pair
from converter.errors import ConfigError


@dataclass(frozen=True)
class ConvNetConfig:
    model_type: str
    num_channels: int
    # (height, width) the model is configured for: position tables and attention biases are
    # built for it; None where config.json has no image size (the model takes any)
    image_size: tuple[int, int] | None
    hidden_size: int  # channels of the last features (what a classifier reads)
    num_labels: int
    extra: Mapping[str, Any]  # the family's settings (see each family's rules)


class ConvNetRules:
    """The keys every family shares; a family overrides `read_extra` (its settings, read and
    checked) and `hidden_size` (from them); `channels_key` names the input's channel count."""

    channels_key = "num_channels"

    def select(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The section of config.json this family reads (the whole file)."""
        return raw

    def read_extra(self, r: ConfigReader) -> dict[str, Any]:
        return {}

    def hidden_size(self, r: ConfigReader, extra: Mapping[str, Any]) -> int:
        raise NotImplementedError

    def read(self, r: ConfigReader) -> ConvNetConfig:
        extra = self.read_extra(r)
        return ConvNetConfig(
            model_type=r.model_type,
            num_channels=r.int(self.channels_key, default=3, hi=64),
            image_size=pair(r, "image_size", MAX_IMAGE_SIDE) if r.has("image_size") else None,
            hidden_size=self.hidden_size(r, extra),
            num_labels=_num_labels(r),
            extra=extra,
        )


def stage_list(r: ConfigReader, key: str, kind: type, stages: int | None = None) -> tuple:
    """A per-stage list of `kind` values (int: positive; float: finite and >= 0), `stages` long
    when given."""
    value = r.get(key)
    if not isinstance(value, list | tuple) or not 0 < len(value) <= MAX_STAGES:
        raise ConfigError(f"'{key}' must list one value per stage (at most {MAX_STAGES})")
    if stages is not None and len(value) != stages:
        raise ConfigError(f"'{key}' lists {len(value)} stages, expected {stages}")
    if kind is int:
        return tuple(check_int(v, key, 1 << 17) for v in value)
    for v in value:
        wrong_bool = kind is not bool and isinstance(v, bool)
        numeric = kind is float and isinstance(v, int | float) and not wrong_bool and v >= 0
        if not (numeric or (kind is not float and isinstance(v, kind))):
            raise ConfigError(f"'{key}' must hold {kind.__name__} values, got {v!r}")
    return tuple(float(v) if kind is float else v for v in value)


def make_divisible(value: float, divisor: int = 8, min_value: int | None = None) -> int:
    """The channel count MobileNet-style models round `value` to: the nearest multiple of
    `divisor` (at least `min_value`, default `divisor`), never more than 10% below it."""
    least = divisor if min_value is None else min_value
    rounded = max(least, int(value + divisor / 2) // divisor * divisor)
    return int(rounded + divisor if rounded < 0.9 * value else rounded)
