"""TwoTowerConfig: the normalized view of a contrastive text-image model's config.json (CLIP,
SigLIP and their relatives): a text tower, a vision tower, and what joins them.

Each tower is read from its own section (`text_config`, `vision_config`) over the defaults of
its own transformers configuration class (`clip_text_model`, ...), every error naming the
section. A BERT-layout text tower (Chinese-CLIP, AltCLIP) reads as an EncoderConfig."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from converter.config.encoder import EncoderConfig, EncoderRules, _num_labels
from converter.config.reader import MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, ConfigReader
from converter.errors import ConfigError

MAX_IMAGE_SIZE = 1 << 14


@dataclass(frozen=True)
class TowerLayers:
    """The transformer stack of a tower: pre-norm layers of attention and an MLP."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    head_dim: int
    norm_eps: float
    activation: str


@dataclass(frozen=True)
class TextTower(TowerLayers):
    vocab_size: int
    max_position_embeddings: int
    # as config.json has it: read by the towers that pool at it (CLIP: one id; 2, the legacy
    # argmax of the ids), left alone by the others (SigLIP's may be a list or out of range)
    eos_token_id: Any
    projection_size: int  # width of SigLIP's text `head` (its hidden size unless set)


@dataclass(frozen=True)
class VisionTower(TowerLayers):
    num_channels: int
    patch_size: int
    image_size: int | None  # None: variable patch grids (SigLIP 2's NaFlex)
    num_patches: int | None  # the position grid's size for NaFlex towers (a square)
    use_head: bool  # SigLIP's attention-pooling head


@dataclass(frozen=True)
class TwoTowerConfig:
    model_type: str
    text: TextTower | EncoderConfig
    vision: VisionTower
    projection_dim: int | None  # None: no projections (SigLIP's towers pool to the shared width)
    num_labels: int  # rows of an image-classification head (len(id2label))
    extra: Mapping[str, Any]

    @property
    def vocab_size(self) -> int:
        return self.text.vocab_size

    @property
    def num_channels(self) -> int:
        return self.vision.num_channels


class TwoTowerRules:
    """How a two-tower family reads config.json: the whole file (`select`), each tower's section
    over the defaults of its transformers type (`text_type`, `vision_type`); `text_rules` reads
    a BERT-layout text tower as an encoder; `projections` False for families without
    text/visual projections; `naflex` for SigLIP 2's variable patch grids."""

    def __init__(
        self,
        text_type: str,
        vision_type: str,
        *,
        text_rules: EncoderRules | None = None,
        projections: bool = True,
        naflex: bool = False,
    ) -> None:
        self.text_type, self.vision_type = text_type, vision_type
        self.text_rules, self.projections, self.naflex = text_rules, projections, naflex

    @property
    def nested_types(self) -> tuple[str, str]:
        """The transformers types of the sections, whose defaults config_defaults.json holds."""
        return self.text_type, self.vision_type

    def select(self, raw: dict[str, Any]) -> dict[str, Any]:
        return raw

    def read(self, r: ConfigReader) -> TwoTowerConfig:
        text = _read_section(r, "text", self.text_type, self.read_text)
        vision = _read_section(r, "vision", self.vision_type, self.read_vision)
        projection = r.int("projection_dim") if self.projections else None
        if not self.projections and text.projection_size != vision.hidden_size:
            raise ConfigError(
                f"text_config: 'projection_size' = {text.projection_size} differs from the "
                f"vision tower's 'hidden_size' = {vision.hidden_size}: the embeddings must share "
                "one width"
            )
        labels = _num_labels(r)
        return TwoTowerConfig(r.model_type, text, vision, projection, labels, self.read_extra(r))

    def read_extra(self, r: ConfigReader) -> dict[str, Any]:
        return {}

    def read_text(self, r: ConfigReader) -> TextTower | EncoderConfig:
        if self.text_rules is not None:
            return self.text_rules.read(r)
        layers = _layers(r)
        return TextTower(
            **layers,
            vocab_size=r.int("vocab_size", hi=MAX_VOCAB),
            max_position_embeddings=r.int("max_position_embeddings", hi=MAX_POSITIONS),
            eos_token_id=r.get("eos_token_id"),
            projection_size=r.int("projection_size", default=layers["hidden_size"]),
        )

    def read_vision(self, r: ConfigReader) -> VisionTower:
        layers = _layers(r)
        patch = r.int("patch_size", hi=MAX_IMAGE_SIZE)
        image_size = num_patches = None
        if self.naflex:
            num_patches = r.int("num_patches", hi=MAX_POSITIONS)
            if round(num_patches**0.5) ** 2 != num_patches:
                raise ConfigError(f"'num_patches' = {num_patches} is not a square grid")
        else:
            image_size = r.int("image_size", hi=MAX_IMAGE_SIZE)
            if image_size % patch:
                raise ConfigError(
                    f"'image_size' = {image_size} is not a multiple of 'patch_size' = {patch}"
                )
        return VisionTower(
            **layers,
            num_channels=r.int("num_channels", default=3, hi=64),
            patch_size=patch,
            image_size=image_size,
            num_patches=num_patches,
            use_head=r.bool("vision_use_head", False),
        )


def _layers(r: ConfigReader) -> dict[str, Any]:
    hidden = r.int("hidden_size")
    heads = r.int("num_attention_heads")
    if hidden % heads:
        raise ConfigError(
            f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
        )
    return {
        "hidden_size": hidden,
        "intermediate_size": r.int("intermediate_size", hi=MAX_VOCAB),
        "num_hidden_layers": r.int("num_hidden_layers", hi=MAX_LAYERS),
        "num_attention_heads": heads,
        "head_dim": hidden // heads,
        "norm_eps": r.float("layer_norm_eps"),
        "activation": r.str("hidden_act"),
    }


def _read_section(r: ConfigReader, tower: str, model_type: str, read):
    """`read` of `text_config` (or `vision_config`) over its type's defaults, errors naming the
    section. An older `text_config_dict` replaces the section whole, as transformers' CLIPConfig
    does (it rebuilds the section from it)."""
    key = f"{tower}_config"
    raw = r.raw.get(f"{key}_dict") or r.raw.get(key) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"'{key}' must be a JSON object")
    try:
        return read(ConfigReader(raw, model_type))
    except ConfigError as err:
        raise ConfigError(f"{key}: {err}") from None
