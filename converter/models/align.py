"""ALIGN: an EfficientNet vision tower (no top conv: its last block's maps, mean- or max-pooled,
are the image embeddings, unprojected) beside a BERT text tower whose first token's state,
projected by `text_projection` (with a bias), is the text embedding; the cosine similarities are
divided by a learned `temperature`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from onnxscript import nn

from converter.components import Linear
from converter.components.batch_norm import BATCH_NORM_UNUSED
from converter.config.encoder import EncoderRules
from converter.config.two_tower import MAX_IMAGE_SIZE, TwoTowerRules
from converter.errors import ConfigError
from converter.models.chinese_clip import BertTextTower
from converter.models.convnext import FEATURE_DIMS
from converter.models.efficientnet import EfficientNetBody, EfficientNetRules, round_filters
from converter.models.two_tower import TwoTowerModel
from converter.registry import Family
from converter.tasks.zero_shot import IMAGE_BATCH, ZERO_SHOT


@dataclass(frozen=True)
class AlignVisionConfig:
    """An EfficientNet tower as the zero-shot task reads image inputs (square, unpatched)."""

    model_type: str
    num_channels: int
    image_size: int
    hidden_size: int  # channels of the last block's maps: the image embedding's width
    extra: dict[str, Any]  # EfficientNet's settings (converter/models/efficientnet.py)
    num_patches: None = None


class AlignRules(TwoTowerRules):
    def __init__(self) -> None:
        super().__init__(
            "align_text_model",
            "align_vision_model",
            text_rules=EncoderRules(token_type_input=False),
        )

    def read(self, r):
        cfg = super().read(r)
        if cfg.projection_dim != cfg.vision.hidden_size:
            raise ConfigError(
                f"'projection_dim' = {cfg.projection_dim} differs from the vision tower's "
                f"last block's {cfg.vision.hidden_size} channels: the embeddings must share one "
                "width"
            )
        return cfg

    def read_vision(self, r) -> AlignVisionConfig:
        extra = EfficientNetRules().read_extra(r)
        # `hidden_dim` only sizes transformers' pooling window (a whole-map pool for any map it
        # takes); no top conv is built from it
        return AlignVisionConfig(
            model_type=r.model_type,
            num_channels=r.int("num_channels", default=3, hi=64),
            image_size=r.int("image_size", hi=MAX_IMAGE_SIZE),
            hidden_size=round_filters(extra, extra["out_channels"][-1]),
            extra=extra,
        )


class AlignVisionTower(EfficientNetBody):
    """EfficientNet's stem and blocks, pooled: (maps, pooled) as a two-tower model's tower."""

    top = False

    def __init__(self, cfg: AlignVisionConfig, dtype, ep, pooled: bool = True):
        super().__init__(cfg, dtype, ep, pooled)
        self.width = cfg.hidden_size

    def forward(self, op, image):
        features = super().forward(op, image.pixel_values)
        return features.hidden, features.pooled


class AlignModel(TwoTowerModel):
    text_cls = BertTextTower
    vision_cls = AlignVisionTower
    heads = (ZERO_SHOT,)

    def projection(self, tower: str, width: int, dtype) -> Linear | None:
        if tower == "vision":
            return None
        return Linear(width, self.cfg.projection_dim, True, dtype)

    def make_scale(self, dtype):
        self.temperature = nn.Parameter([], dtype)

    def scaled(self, op, similarities):
        return op.Div(similarities, self.temperature)

    def image_hidden_dims(self) -> list:
        return [IMAGE_BATCH, self.vision_model.width, *FEATURE_DIMS]


FAMILIES = [
    Family(
        "align",
        AlignModel,
        "an EfficientNet vision tower pooled without projection beside a BERT text tower "
        "projected from its first token; similarities divided by a learned temperature",
        ("kakaobrain/align-base",),
        rules=AlignRules(),
        task="zero-shot-image-classification",
        category="multimodal",
        unused=(
            BATCH_NORM_UNUSED,
            r"text_model\.embeddings\.(position_ids|token_type_ids)",
            r"text_model\.pooler\..*",
        ),
    ),
]
