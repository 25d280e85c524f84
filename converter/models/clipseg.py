"""CLIPSeg's CLIP (CLIPSegModel): CLIP's two towers, its vision tower taking images of any size,
as CLIPSeg's processor gives them (352 pixels where vision_config.image_size is 224): the
position grid is resized to the image's patch grid (transformers' default
interpolate_pos_encoding=True: bicubic, a = -0.75, half-pixel, no antialiasing; a resize to
the grid's own size is the identity).

The Hub's checkpoints are CLIPSegForImageSegmentation's; converted with --task
zero-shot-image-classification, their towers give CLIPSegModel. That head itself (image
segmentation: activations of `extract_layers` reduced to `reduce_dim`, FiLM-conditioned on a
text or image prompt's embedding, a small post-norm transformer decoder and transposed
convolutions to a mask at the image's size) is not built: no task here takes a prompt with an
image and returns a mask."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.config.two_tower import TwoTowerRules, VisionTower
from converter.models.clip import (
    CLIP_UNUSED,
    ClipModel,
    ClipVisionEmbeddings,
    ClipVisionTransformer,
)
from converter.registry import Family
from converter.tasks.zero_shot import IMAGE_BATCH, ZERO_SHOT

IMAGE_TOKENS = "image_tokens"  # one per patch of the image, plus the class token


class ResizedPositions(nn.Module):
    """The position table (the class token's row, then a square grid), the grid resized to the
    image's patch grid."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType):
        super().__init__()
        self.side, self.patch = cfg.image_size // cfg.patch_size, cfg.patch_size
        self.weight = nn.Parameter([self.side**2 + 1, cfg.hidden_size], dtype)
        self.hidden, self.dtype = cfg.hidden_size, dtype

    def forward(self, op, pixels):
        class_position = op.Unsqueeze(op.Slice(self.weight, [0], [1], [0]), [0])
        grid = op.Slice(self.weight, [1], [2**62], [0])
        grid = op.Reshape(grid, [1, self.side, self.side, self.hidden])
        # ONNX Runtime's CPU Resize has no float16 kernel: computed in float32
        grid = op.Cast(op.Transpose(grid, perm=[0, 3, 1, 2]), to=ir.DataType.FLOAT)
        rows_columns = op.Div(op.Shape(pixels, start=2, end=4), [self.patch, self.patch])
        sizes = op.Concat([1, self.hidden], rows_columns, axis=0)
        resized = op.Resize(
            grid,
            None,
            None,
            sizes,
            mode="cubic",
            cubic_coeff_a=-0.75,
            coordinate_transformation_mode="half_pixel",
        )
        resized = op.Cast(resized, to=self.dtype)
        patches = op.Reshape(op.Transpose(resized, perm=[0, 2, 3, 1]), [1, -1, self.hidden])
        return op.Concat(class_position, patches, axis=1)


class ResizedVisionEmbeddings(ClipVisionEmbeddings):
    """CLIP's embeddings with the position grid resized to the image's patch grid."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.position_embedding = ResizedPositions(cfg, dtype)

    def positions(self, op, pixels):
        return self.position_embedding(op, pixels)


class ClipSegVisionTransformer(ClipVisionTransformer):
    def __init__(self, cfg: VisionTower, dtype: ir.DataType, ep, pooled=True):
        super().__init__(cfg, dtype, ep, pooled=pooled)
        self.embeddings = ResizedVisionEmbeddings(cfg, dtype)


class ClipSegModel(ClipModel):
    vision_cls = ClipSegVisionTransformer
    heads = (ZERO_SHOT,)

    def image_dims(self) -> tuple[str, str]:
        return "height", "width"

    def image_hidden_dims(self) -> list:
        return [IMAGE_BATCH, IMAGE_TOKENS, self.vision_model.width]


FAMILIES = [
    Family(
        "clipseg",
        ClipSegModel,
        "CLIP's towers, the vision tower's positions resized (bicubic) to each image's patch "
        "grid (zero-shot: CLIPSegModel)",
        ("CIDAS/clipseg-rd64-refined",),
        rules=TwoTowerRules("clipseg_text_model", "clipseg_vision_model"),
        task="zero-shot-image-classification",
        category="multimodal",
        unused=(*CLIP_UNUSED, r"decoder\..+"),
        # the Hub's checkpoints are CLIPSegForImageSegmentation's: the towers under `clip.`
        renames=((r"^clip\.", ""),),
    ),
]
