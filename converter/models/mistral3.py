"""Mistral 3 (Mistral Small 3.1): the Pixtral tower's hidden states at `vision_feature_layer`
through a projector (RMSNorm; a patch merger concatenating each spatial_merge_size x
spatial_merge_size block of an image's patch grid, blocks row by row, into one token by
`merging_layer`; linear_1, the activation, linear_2) in place of the [IMG] tokens of a
registered text decoder (Mistral, Ministral 3).

The vision graph reads pixel_values [num_images, 3, height, width] and image_sizes
[num_images, 2], as transformers' image processor pads them and as onnxruntime-genai's
mistral3 processor feeds them. The LM head is tied to the embeddings as transformers ties it:
by the top-level tie_word_embeddings, where the checkpoint has no lm_head of its own."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, RMSNorm, activation
from converter.config.reader import ConfigReader
from converter.config.vision_language import VisionLanguageConfig, VisionLanguageRules
from converter.errors import ConfigError
from converter.models.llava import LLAVA_RENAMES
from converter.models.pixtral import (
    PatchGrid,
    PixtralVisionConfig,
    PixtralVisionModel,
    locate,
    read_pixtral,
)
from converter.models.vision_language import VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK

HEAD = "language_model.lm_head.weight"


class Mistral3Rules(VisionLanguageRules):
    text_type = "mistral"
    vision_type = "pixtral"

    def read(self, r: ConfigReader) -> VisionLanguageConfig:
        cfg = super().read(r)
        merge = r.int("spatial_merge_size", hi=64)
        return replace(cfg, vision=replace(cfg.vision, spatial_merge_size=merge))

    def read_vision(self, r: ConfigReader) -> PixtralVisionConfig:
        tower = r.raw.get("model_type", self.vision_type)
        if tower != self.vision_type:
            raise ConfigError(
                f"'model_type' = {tower!r}: the vision tower converts as pixtral only"
            )
        return read_pixtral(r)

    def read_extra(self, r: ConfigReader, text, vision: PixtralVisionConfig) -> dict:
        chosen = r.get("vision_feature_layer")
        layer = chosen[0] if isinstance(chosen, list) and len(chosen) == 1 else chosen
        depth = vision.num_hidden_layers
        if (
            not isinstance(layer, int)
            or isinstance(layer, bool)
            or not -depth - 1 <= layer <= depth
        ):
            raise ConfigError(
                f"'vision_feature_layer' = {chosen!r} must name one hidden state of the "
                f"{depth}-layer tower (0..{depth}, or negative from the end)"
            )
        return {
            "feature_layer": layer % (depth + 1),  # 0: ln_pre's output, i: the i-th layer's
            "projector_act": r.str("projector_hidden_act"),
            "projector_bias": r.bool("multimodal_projector_bias", False),
            "norm_eps": text.norm_eps,
            "tie_word_embeddings": r.bool("tie_word_embeddings", True),
        }


class PatchMerger(nn.Module):
    """Each image's merge blocks, row by row: the block's patches concatenated channel-major
    (channel, then row and column within the block, as torch's unfold lays them out), through
    `merging_layer`. Patches past the last whole block are dropped."""

    def __init__(self, hidden: int, merge: int, dtype: ir.DataType):
        super().__init__()
        self.merging_layer = Linear(hidden * merge**2, hidden, False, dtype)
        self.hidden, self.merge = hidden, merge

    def forward(self, op, x, grid: PatchGrid):
        m = self.merge
        counts = op.Mul(grid.rows, grid.cols)
        starts = op.Sub(op.CumSum(counts, 0), counts)
        block_cols = op.Div(grid.cols, m)
        image, within = locate(op, op.Mul(op.Div(grid.rows, m), block_cols))
        per_row = op.Gather(block_cols, image)
        block_row, block_col = op.Div(within, per_row), op.Mod(within, per_row)
        width = op.Unsqueeze(op.Gather(grid.cols, image), [1])
        offsets = np.arange(m * m, dtype=np.int64)
        down = op.Constant(value=ir.tensor(offsets // m))
        across = op.Constant(value=ir.tensor(offsets % m))
        row = op.Add(op.Unsqueeze(op.Mul(block_row, m), [1]), down)  # [tokens, m²]
        col = op.Add(op.Unsqueeze(op.Mul(block_col, m), [1]), across)
        start = op.Unsqueeze(op.Gather(starts, image), [1])
        source = op.Add(op.Add(start, op.Mul(row, width)), col)
        blocks = op.Transpose(op.Gather(x, source), perm=[0, 2, 1])  # [tokens, hidden, m²]
        return self.merging_layer(op, op.Reshape(blocks, [-1, self.hidden * m * m]))


class Mistral3Projector(nn.Module):
    def __init__(self, cfg: VisionLanguageConfig, dtype: ir.DataType):
        super().__init__()
        vision, extra, hidden = cfg.vision, cfg.extra, cfg.text.hidden_size
        self.norm = RMSNorm(vision.hidden_size, extra["norm_eps"], dtype)
        self.patch_merger = PatchMerger(vision.hidden_size, vision.spatial_merge_size, dtype)
        self.linear_1 = Linear(vision.hidden_size, hidden, extra["projector_bias"], dtype)
        self.linear_2 = Linear(hidden, hidden, extra["projector_bias"], dtype)
        self.act = extra["projector_act"]

    def forward(self, op, x, grid: PatchGrid):
        x = self.patch_merger(op, self.norm(op, x), grid)
        return self.linear_2(op, activation(op, self.act, self.linear_1(op, x)))


class Mistral3Model(VisionLanguageModel):
    image_layout = "sized"
    image_prompt = "[IMG]"  # genai's processor expands it to the image's rows of tokens
    tower_name, projector_name = "vision_tower", "multi_modal_projector"

    def __init__(self, cfg, dtype, ep, task: str, tensors, part: str = "decoder"):
        tied = cfg.extra["tie_word_embeddings"] and HEAD not in tensors
        cfg = replace(cfg, text=replace(cfg.text, tie_word_embeddings=tied))
        super().__init__(cfg, dtype, ep, task, tensors, part)

    def make_vision(self, cfg, dtype, ep) -> None:
        depth = cfg.extra["feature_layer"]
        tower = PixtralVisionModel(replace(cfg.vision, num_hidden_layers=depth), dtype, ep)
        setattr(self, self.tower_name, tower)
        setattr(self, self.projector_name, Mistral3Projector(cfg, dtype))

    def unused_tensors(self) -> tuple[str, ...]:
        depth, total = self.cfg.extra["feature_layer"], self.cfg.vision.num_hidden_layers
        layers = rf"{self.tower_name}\.transformer\.layers"
        return (*super().unused_tensors(), *(rf"{layers}\.{i}\..+" for i in range(depth, total)))

    @classmethod
    def genai_fields(cls, cfg, section: str) -> dict:
        if section == "vision":
            vision = cfg.vision
            return {
                "patch_size": vision.patch_size,
                "spatial_merge_size": vision.spatial_merge_size,
            }
        return super().genai_fields(cfg, section)

    def image_features(self, op, image) -> ir.Value:
        tower, projector = getattr(self, self.tower_name), getattr(self, self.projector_name)
        states, grid = tower(op, image.pixel_values, image.image_sizes)
        return projector(op, states[-1], grid)


FAMILIES = [
    Family(
        "mistral3",
        Mistral3Model,
        "a Pixtral tower (2-D rotary over each image's own patch grid, images of any size "
        "attending within themselves) through a patch merger and a two-layer projector in "
        "place of the image tokens of a registered text decoder",
        ("mistralai/Mistral-Small-3.1-24B-Instruct-2503",),
        rules=Mistral3Rules(),
        task=VLM_TASK,
        category="vlm",
        genai="mistral3",
        renames=LLAVA_RENAMES,
    ),
]
