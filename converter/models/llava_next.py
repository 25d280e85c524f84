"""LLaVA-NeXT: LLaVA over AnyRes crops (converter/models/anyres.py). The vision graph takes
every image's crops, padded to the batch's most, and each image's size: pixel_values
[num_images, num_crops, 3, image_size, image_size], image_sizes [num_images, 2]; it picks each
image's grid, runs the tower on its real crops only and packs their projected features, the
base crop's first, then the unpadded grid map with `image_newline` closing each row."""

from __future__ import annotations

import onnx_ir as ir

from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.models.anyres import AnyRes, Newline, read_pinpoints
from converter.models.llava import LLAVA_RENAMES, LlavaModel, LlavaRules
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK

# LlavaNextConfig's when config.json has none
DEFAULT_PINPOINTS = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]]


class LlavaNextRules(LlavaRules):
    class_token = True  # the tower's first token, which must be dropped to leave the patches
    default_pinpoints = DEFAULT_PINPOINTS

    def read_extra(self, r: ConfigReader, text, vision) -> dict:
        extra = super().read_extra(r, text, vision)
        if extra["drop_class_token"] != self.class_token:
            want = "default" if self.class_token else "full"
            raise ConfigError(
                f"'vision_feature_select_strategy' = "
                f"{r.get('vision_feature_select_strategy')!r}: only {want!r} leaves the "
                f"{self.vision_type} tower's patch tokens, the grid AnyRes packs"
            )
        pinpoints = r.get("image_grid_pinpoints", default=self.default_pinpoints)
        return {**extra, "pinpoints": read_pinpoints(pinpoints, vision.image_size)}


class LlavaNextModel(LlavaModel):
    image_layout = "crops"

    def make_vision(self, cfg, dtype, ep) -> None:
        super().make_vision(cfg, dtype, ep)
        self.image_newline = Newline(cfg.text.hidden_size, dtype)
        crop = cfg.vision.image_size
        side = crop // cfg.vision.patch_size
        self.anyres = AnyRes(cfg.extra["pinpoints"], crop, side, cfg.extra.get("max_crops"))

    def image_features(self, op, image) -> ir.Value:
        anyres, sizes, tiled = self.anyres, image.image_sizes, self.tiled(op, image)
        grids = anyres.grids(op, sizes)
        crops, counts = anyres.crops(op, image.pixel_values, grids, tiled)
        features = self.crop_features(op, crops)
        return anyres.pack(op, features, self.image_newline(op), sizes, grids, counts, tiled)

    def tiled(self, op, image) -> ir.Value | None:
        """Which images are tiled ([images] bool); None: every one."""
        return None


class LlavaNextVideoModel(LlavaNextModel):
    # its video pooler's weights (spatial_pool_mode "conv"): videos are not converted
    tower_unused = (*LlavaNextModel.tower_unused, r"(model\.)?vision_resampler\..+")


# LLaVA's layouts, and the newline vector (under `model.` in transformers 5's)
LLAVA_NEXT_RENAMES = (*LLAVA_RENAMES, (r"^(model\.)?image_newline$", "image_newline.weight"))

FAMILIES = [
    Family(
        "llava_next",
        LlavaNextModel,
        "LLaVA over AnyRes crops: the grid best fitting each image (image_grid_pinpoints) "
        "chosen in the graph from image_sizes, the crops' features unpadded to the image's "
        "aspect, an image_newline per row (onnxruntime runs it, onnxruntime-genai has no "
        "LLaVA-NeXT type)",
        ("llava-hf/llava-v1.6-mistral-7b-hf",),
        rules=LlavaNextRules(),
        task=VLM_TASK,
        category="vlm",
        renames=LLAVA_NEXT_RENAMES,
    ),
    Family(
        "llava_next_video",
        LlavaNextVideoModel,
        "LLaVA-NeXT's image path (AnyRes crops, unpadded, image_newline rows); images only: "
        "the pooled video frames and their video tokens are not converted (onnxruntime runs "
        "it, onnxruntime-genai has no LLaVA-NeXT-Video type)",
        ("llava-hf/LLaVA-NeXT-Video-7B-hf",),
        rules=LlavaNextRules(),
        task=VLM_TASK,
        category="vlm",
        renames=LLAVA_NEXT_RENAMES,
    ),
]
