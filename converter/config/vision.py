"""VisionConfig: the normalized view of an image encoder's config.json, and the rules that read
it. A plain ViT is one stage; hierarchical models (Swin, ConvNeXt, ResNet) list their stages'
widths and depths. Family-specific settings go in `extra` (each family's rules say which)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from converter.config.encoder import _num_labels
from converter.config.reader import MAX_DIM, MAX_LAYERS, ConfigReader
from converter.errors import ConfigError

MAX_IMAGE_SIDE = 1 << 14
MAX_STAGES = 16


@dataclass(frozen=True)
class VisionConfig:
    model_type: str
    # (height, width) the position tables and windows are built for (None: any size)
    image_size: tuple[int, int] | None
    patch_size: tuple[int, int] | None  # (height, width) of the patch embedding's stride
    num_channels: int
    widths: tuple[int, ...]  # channels of each stage (a plain ViT: one stage)
    depths: tuple[int, ...]  # blocks of each stage
    heads: tuple[int, ...]  # attention heads of each stage (empty for convolutional models)
    intermediate_sizes: tuple[int, ...]  # MLP width of each stage
    norm_eps: float
    activation: str
    qkv_bias: bool
    num_labels: int  # rows of the classification head (len(id2label))
    extra: Mapping[str, Any]  # family-specific settings its rules read (see each family)

    @property
    def hidden_size(self) -> int:
        """The width of the last features (what a classification head reads)."""
        return self.widths[-1]

    @property
    def num_hidden_layers(self) -> int:
        return sum(self.depths)

    @property
    def grid(self) -> tuple[int, int]:
        """Patches along the height and width of the configured image."""
        return (self.image_size[0] // self.patch_size[0], self.image_size[1] // self.patch_size[1])


class VisionRules:
    """How an image family reads config.json: ViT's keys (`hidden_size`, `num_hidden_layers`,
    `num_attention_heads`, `intermediate_size`) by default; a family with stages overrides
    `stages` (one with another MLP width, `intermediate_size`), a convolutional one
    `image_size` (None: any size) and `patch_size`, and `read_extra` returns its own
    settings."""

    eps_default = 1e-12  # ViT's layer_norm_eps when the file leaves it out

    def select(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The section of config.json this family reads (the whole file)."""
        return raw

    def stages(self, r: ConfigReader) -> tuple[tuple[int, ...], ...]:
        """(widths, depths, heads, intermediate sizes), one entry per stage."""
        hidden = r.int("hidden_size")
        heads = r.int("num_attention_heads")
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
            )
        layers = r.int("num_hidden_layers", hi=MAX_LAYERS)
        return (hidden,), (layers,), (heads,), (self.intermediate_size(r, hidden),)

    def intermediate_size(self, r: ConfigReader, hidden: int) -> int:
        return r.int("intermediate_size", hi=MAX_DIM * 4)

    def image_size(self, r: ConfigReader) -> tuple[int, int] | None:
        """The size the graph is built for; None for families that take any size."""
        return pair(r, "image_size", MAX_IMAGE_SIDE)

    def patch_size(self, r: ConfigReader) -> tuple[int, int] | None:
        return pair(r, "patch_size", MAX_IMAGE_SIDE)

    def read_extra(self, r: ConfigReader) -> dict[str, Any]:
        return {}

    def read(self, r: ConfigReader) -> VisionConfig:
        widths, depths, heads, intermediate = self.stages(r)
        return VisionConfig(
            model_type=r.model_type,
            image_size=self.image_size(r),
            patch_size=self.patch_size(r),
            num_channels=r.int("num_channels", default=3, hi=64),
            widths=widths,
            depths=depths,
            heads=heads,
            intermediate_sizes=intermediate,
            norm_eps=r.float("layer_norm_eps", default=self.eps_default),
            activation=r.str("hidden_act", default="gelu"),
            qkv_bias=r.bool("qkv_bias", True),
            num_labels=_num_labels(r),
            extra=self.read_extra(r),
        )


def pair(r: ConfigReader, key: str, hi: int) -> tuple[int, int]:
    """An int or [height, width] setting as (height, width)."""
    value = r.get(key)
    if isinstance(value, list | tuple) and len(value) == 2:
        return (check_int(value[0], key, hi), check_int(value[1], key, hi))
    return (r.int(key, hi=hi),) * 2


def int_list(r: ConfigReader, key: str, hi: int = MAX_DIM, lo: int = 1) -> tuple[int, ...]:
    """A list of integers in [lo, hi] (one per stage)."""
    value = r.get(key)
    if not isinstance(value, list | tuple) or not 0 < len(value) <= MAX_STAGES:
        raise ConfigError(f"'{key}' must list one integer per stage (at most {MAX_STAGES})")
    return tuple(check_int(v, key, hi, lo) for v in value)


def check_int(value: Any, key: str, hi: int, lo: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"'{key}' must hold integers, got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(f"'{key}' holds {value}, outside the sane range [{lo}, {hi}]")
    return value


def same_length(**lists: tuple) -> None:
    """Per-stage lists must agree on the number of stages."""
    lengths = {name: len(v) for name, v in lists.items()}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"'{k}' has {n}" for k, n in lengths.items())
        raise ConfigError(f"per-stage settings disagree on the number of stages: {listed}")
