"""Idefics 3 (and SmolVLM, its layout): a SigLIP-like vision transformer over the processor's
tiles, a connector (pixel shuffle, then one linear) into a Llama-family text model.

The vision graph reads the processor's output as it is: pixel_values [batch, num_tiles, 3, S, S]
and pixel_attention_mask [batch, num_tiles, S, S], S the tower's image_size (a tile of another
size is refused by the input's shape). Tiles whose pixels are all zero pad a prompt's tile list
and are dropped, as transformers drops them; the rest are encoded in order, each into
(S / patch / scale_factor)² tokens. A patch is real where any of its pixels is; padding patches
are hidden from attention and the real ones take the position of their bucket of the tower's
position grid (NaViT-style: the real rows and columns spread over the grid), computed in the
graph exactly as transformers computes it, so a partly padded tile converts too.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.config.reader import ConfigReader
from converter.config.two_tower import TwoTowerRules, VisionTower
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.models.clip import PatchConv
from converter.models.encoder import Table
from converter.models.siglip import SiglipVisionTransformer
from converter.models.vision_language import VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK
from converter.tasks.zero_shot import ImageInputs

INT64, FLOAT = ir.DataType.INT64, ir.DataType.FLOAT
TORCH_ARANGE_LANES = 8  # float32 lanes per vector of torch's CPU arange kernel
BUCKET_CLAMP = 1.0 - 1e-6  # transformers keeps fractional coordinates below 1


class Idefics3Rules(VisionLanguageRules):
    text_type = "llama"
    vision_type = "idefics3_vision"

    def read(self, r: ConfigReader):
        cfg = super().read(r)
        # the head is tied (or not) by the top-level setting, not the text model's
        tied = r.bool("tie_word_embeddings", False)
        return replace(cfg, text=replace(cfg.text, tie_word_embeddings=tied))

    def read_vision(self, r: ConfigReader) -> VisionTower:
        return TwoTowerRules("", self.vision_type).read_vision(r)

    def read_extra(self, r: ConfigReader, text, vision: VisionTower) -> dict:
        scale = r.int("scale_factor", hi=64)
        side = vision.image_size // vision.patch_size
        if side % scale:
            raise ConfigError(
                f"'scale_factor' = {scale} does not divide the tower's {side} patches a side "
                f"(vision_config image_size {vision.image_size} / patch_size {vision.patch_size})"
            )
        return {"scale_factor": scale}


def torch_arange(start: float, end: float, step: float) -> np.ndarray:
    """torch.arange(start, end, step) in float32 as its CPU kernel computes it: in double,
    except that whole vector pairs take each vector's first value rounded to float32 and add
    the lanes' steps to it (the bucket boundaries must match it bit for bit)."""
    size = math.ceil((end - start) / step)
    values = np.float32(start + step * np.arange(size, dtype=np.float64))
    lanes = TORCH_ARANGE_LANES
    for first in range(0, size // (2 * lanes) * 2 * lanes, lanes):
        base = np.float64(np.float32(start + step * first))
        values[first : first + lanes] = base + step * np.arange(lanes)
    return values


def bucket_positions(op, patch_mask, side: int) -> ir.Value:
    """Each patch's row of the position table [images, rows x columns] from the patch mask
    [images, rows, columns] (a grid of any size): the real rows (columns) of an image spread
    over the table's `side` buckets, padding patches at 0."""
    boundaries = op.Constant(value=ir.tensor(torch_arange(1 / side, 1.0, 1 / side)))
    real = op.Cast(patch_mask, to=INT64)

    def buckets(count, axis: int):  # count [images] real rows (columns) -> [images, rows]
        length = op.Squeeze(op.Shape(real, start=axis, end=axis + 1), [0])
        index = op.Cast(op.Range(0, length, 1), to=FLOAT)
        step = op.Div(1.0, op.Cast(count, to=FLOAT))
        coords = op.Min(op.Mul(index, op.Unsqueeze(step, [1])), BUCKET_CLAMP)
        below = op.LessOrEqual(boundaries, op.Unsqueeze(coords, [2]))
        return op.ReduceSum(op.Cast(below, to=INT64), [2], keepdims=0)

    rows = buckets(op.ReduceSum(op.Gather(real, 0, axis=2), [1], keepdims=0), 1)
    cols = buckets(op.ReduceSum(op.Gather(real, 0, axis=1), [1], keepdims=0), 2)
    grid = op.Add(op.Unsqueeze(op.Mul(rows, side), [2]), op.Unsqueeze(cols, [1]))
    positions = op.Where(patch_mask, grid, op.Constant(value_int=0))
    return op.Reshape(positions, [0, -1])


def non_blank(op, images) -> ir.Value:
    """[images] true where an image [images, channels, height, width] has a non-zero pixel
    (all-zero images pad a prompt's list, and transformers drops them)."""
    blank = op.ReduceMin(op.Cast(op.Equal(images, 0.0), to=ir.DataType.INT32), [1, 2, 3])
    return op.Equal(op.Reshape(blank, [-1]), 0)


def real_tiles(op, tiles, keep_a_blank: bool) -> ir.Value:
    """[tiles] True for each tile [tiles, channels, S, S] with a pixel other than zero (the
    rest pad a prompt's tile list); `keep_a_blank`: the first tile counts when none does."""
    real = non_blank(op, tiles)
    if keep_a_blank:
        none = op.Equal(op.ReduceMax(op.Cast(real, to=INT64), keepdims=0), 0)
        first = op.Equal(op.Range(0, op.Squeeze(op.Shape(real), [0]), 1), 0)
        real = op.Or(real, op.And(first, none))
    return real


class Idefics3VisionEmbeddings(nn.Module):
    """The patches (a biased Conv2d) plus the position rows of their buckets."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType):
        super().__init__()
        self.side = cfg.image_size // cfg.patch_size
        self.patch_embedding = PatchConv(cfg, dtype, bias=True)
        self.position_embedding = Table(self.side**2, cfg.hidden_size, dtype)
        self.tokens = self.side**2

    def forward(self, op, image):
        patches = self.patch_embedding(op, image.pixel_values)
        mask = op.Reshape(image.pixel_attention_mask, [0, self.side, self.side])
        positions = bucket_positions(op, mask, self.side)
        return op.Add(patches, self.position_embedding(op, positions))


class Idefics3VisionTransformer(SiglipVisionTransformer):
    embeddings_cls = Idefics3VisionEmbeddings


class ModalityProjection(nn.Module):
    def __init__(self, width: int, hidden: int, dtype: ir.DataType):
        super().__init__()
        self.proj = Linear(width, hidden, False, dtype)

    def forward(self, op, x):
        return self.proj(op, x)


class Idefics3Connector(nn.Module):
    """Pixel shuffle (each scale x scale block of patches into one token of their
    concatenated states, in transformers' order), then the projection."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        vision, scale = cfg.vision, cfg.extra["scale_factor"]
        self.side, self.scale = vision.image_size // vision.patch_size, scale
        self.hidden = vision.hidden_size
        self.modality_projection = ModalityProjection(
            vision.hidden_size * scale**2, cfg.text.hidden_size, dtype
        )

    def forward(self, op, x):
        side, scale, hidden = self.side, self.scale, self.hidden
        x = op.Reshape(x, [0, side, side // scale, hidden * scale])
        x = op.Transpose(x, perm=[0, 2, 1, 3])
        x = op.Reshape(x, [0, side // scale, side // scale, hidden * scale**2])
        x = op.Transpose(x, perm=[0, 2, 1, 3])
        x = op.Reshape(x, [-1, hidden * scale**2])
        return self.modality_projection(op, x)


class Idefics3Model(VisionLanguageModel):
    image_layout = "tiles"
    keep_a_blank_tile = False  # SmolVLM encodes the first tile when every tile is blank

    def make_vision(self, cfg, dtype, ep) -> None:
        self.vision_model = Idefics3VisionTransformer(cfg.vision, dtype, ep, pooled=False)
        self.connector = Idefics3Connector(cfg, dtype)

    def image_features(self, op, image) -> ir.Value:
        vision = self.cfg.vision
        side, patch = vision.image_size, vision.patch_size
        tiles = op.Reshape(image.pixel_values, [-1, vision.num_channels, side, side])
        masks = op.Reshape(image.pixel_attention_mask, [-1, side, side])
        real = real_tiles(op, tiles, self.keep_a_blank_tile)
        tiles, masks = op.Compress(tiles, real, axis=0), op.Compress(masks, real, axis=0)
        count = side // patch
        per_patch = op.Reshape(masks, [0, count, patch, count, patch])
        patch_mask = op.Greater(op.ReduceSum(per_patch, [2, 4], keepdims=0), 0)
        kept = ImageInputs(tiles, pixel_attention_mask=op.Reshape(patch_mask, [0, -1]))
        hidden, _ = self.vision_model(op, kept)
        return self.connector(op, hidden)


# transformers' module names (its 4 and 5 save the same): `model.text_model.`,
# `model.vision_model.`, `model.connector.`, `lm_head.`
IDEFICS3_RENAMES = (
    (r"^model\.text_model\.", "language_model.model."),
    (r"^model\.vision_model\.", "vision_model."),
    (r"^model\.connector\.", "connector."),
    (r"^lm_head\.", "language_model.lm_head."),
)

FAMILIES = [
    Family(
        "idefics3",
        Idefics3Model,
        "a SigLIP-like tower over the processor's tiles (blank padding tiles dropped, padded "
        "patches masked and bucketed), a pixel-shuffle connector into a Llama text model "
        "(vision.onnx, embedding.onnx, model.onnx; onnxruntime runs it, onnxruntime-genai has "
        "no Idefics 3 type)",
        ("HuggingFaceM4/Idefics3-8B-Llama3",),
        rules=Idefics3Rules(),
        task=VLM_TASK,
        category="vlm",
        renames=IDEFICS3_RENAMES,
    ),
]
