"""Idefics 2: a SigLIP-like vision transformer over images of any size (NaViT-style: padded
patches masked, the real ones bucketed over the tower's position grid, as Idefics 3 does), a
connector (a SwiGLU modality projection into the text width, then a perceiver resampler,
converter/components/perceiver.py) giving each image `resampler_n_latents` tokens, into a
Mistral text model.

The vision graph reads the processor's output as it is: pixel_values [batch, num_images, 3,
height, width] and pixel_attention_mask [batch, num_images, height, width], the images padded
bottom and right to the largest of the batch. All-zero images pad a prompt's image list and are
dropped, as transformers drops them. A patch is real only where all of its pixels are (a part
patch at an image's edge is padding, as transformers has it); the rows and columns past a whole
number of patches are not read. The image splitting of the processor (`do_image_splitting`:
four crops and the whole image, each an image here, 5 x the tokens) needs nothing more.
The mask is required: a caller without one (`do_pad` off) passes ones.
"""

from __future__ import annotations

from dataclasses import replace

import onnx_ir as ir
from onnxscript import nn

from converter.components import GatedMLP, Linear
from converter.components.perceiver import PerceiverResampler, PerceiverSettings
from converter.config.reader import ConfigReader
from converter.config.two_tower import TwoTowerRules, VisionTower
from converter.config.vision_language import VisionLanguageRules, read_section, section
from converter.errors import ConfigError
from converter.models.clip import PatchConv
from converter.models.encoder import Table
from converter.models.idefics3 import IDEFICS3_RENAMES, bucket_positions, non_blank
from converter.models.siglip import SiglipVisionTransformer
from converter.models.vision_language import VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK
from converter.tasks.zero_shot import ImageInputs

PERCEIVER_TYPE = "idefics2_perceiver"


class Idefics2Rules(VisionLanguageRules):
    text_type = "mistral"
    vision_type = "idefics2_vision"
    tie_from_text = False  # the top-level tie_word_embeddings alone ties the head

    @property
    def nested_types(self) -> tuple[str, ...]:
        return (*super().nested_types, PERCEIVER_TYPE)

    def read_vision(self, r: ConfigReader) -> VisionTower:
        return TwoTowerRules("", self.vision_type).read_vision(r)

    def read_extra(self, r: ConfigReader, text, vision: VisionTower) -> dict:
        raw = section(r, "perceiver_config")
        perceiver = read_section(
            "perceiver_config", lambda: read_perceiver(ConfigReader(raw, PERCEIVER_TYPE), text)
        )
        return {"perceiver": perceiver}


def read_perceiver(r: ConfigReader, text) -> PerceiverSettings:
    hidden, eps = r.int("hidden_size"), r.float("rms_norm_eps")
    if hidden != text.hidden_size:
        # transformers' config replaces both by the text model's (the resampler works in its
        # width)
        hidden, eps = text.hidden_size, text.norm_eps
    heads, kv_heads = r.int("resampler_n_heads"), r.int("num_key_value_heads")
    if heads % kv_heads:
        raise ConfigError(
            f"'resampler_n_heads' = {heads} is not a multiple of 'num_key_value_heads' = {kv_heads}"
        )
    return PerceiverSettings(
        hidden_size=hidden,
        latents=r.int("resampler_n_latents"),
        depth=r.int("resampler_depth"),
        heads=heads,
        head_dim=r.int("resampler_head_dim"),
        kv_heads=kv_heads,
        norm_eps=eps,
        activation=r.str("hidden_act"),
    )


class Idefics2VisionEmbeddings(nn.Module):
    """The patches (a biased Conv2d) plus the position rows of their buckets, over the patch
    grid of the padded images (rows and columns from the pixels' height and width)."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType):
        super().__init__()
        self.side = cfg.image_size // cfg.patch_size
        self.patch_embedding = PatchConv(cfg, dtype, bias=True)
        self.position_embedding = Table(self.side**2, cfg.hidden_size, dtype)
        self.patch, self.tokens = cfg.patch_size, self.side**2

    def forward(self, op, image):
        patches = self.patch_embedding(op, image.pixel_values)
        grid = op.Div(op.Shape(image.pixel_values, start=2, end=4), self.patch)
        mask = op.Reshape(image.pixel_attention_mask, op.Concat([0], grid, axis=0))
        return op.Add(patches, self.position_embedding(op, bucket_positions(op, mask, self.side)))


class Idefics2VisionTransformer(SiglipVisionTransformer):
    embeddings_cls = Idefics2VisionEmbeddings


class ModalityProjection(GatedMLP):
    """SwiGLU (the text model's activation and intermediate size) from the tower's width into
    the text model's."""

    def __init__(self, width: int, text, dtype: ir.DataType):
        super().__init__(replace(text, hidden_size=width, mlp_bias=False), dtype)
        self.down_proj = Linear(text.intermediate_size, text.hidden_size, False, dtype)


class Idefics2Connector(nn.Module):
    def __init__(self, cfg, dtype: ir.DataType, ep):
        super().__init__()
        self.modality_projection = ModalityProjection(cfg.vision.hidden_size, cfg.text, dtype)
        self.perceiver_resampler = PerceiverResampler(cfg.extra["perceiver"], dtype, ep)

    def forward(self, op, hidden, patch_mask):
        return self.perceiver_resampler(op, self.modality_projection(op, hidden), patch_mask)


class Idefics2Model(VisionLanguageModel):
    image_layout = "padded_images"

    def make_vision(self, cfg, dtype, ep) -> None:
        self.vision_model = Idefics2VisionTransformer(cfg.vision, dtype, ep, pooled=False)
        self.connector = Idefics2Connector(cfg, dtype, ep)

    def image_features(self, op, image) -> ir.Value:
        vision, text = self.cfg.vision, self.cfg.text
        patch = vision.patch_size
        sides = op.Shape(image.pixel_values, start=3, end=5)
        images = op.Reshape(image.pixel_values, op.Concat([-1, vision.num_channels], sides, axis=0))
        masks = op.Reshape(image.pixel_attention_mask, op.Concat([-1], sides, axis=0))
        real = non_blank(op, images)
        images, masks = op.Compress(images, real, axis=0), op.Compress(masks, real, axis=0)
        grid = op.Div(sides, patch)  # whole patches a column and a row
        masks = op.Slice(masks, [0, 0], op.Mul(grid, patch), [1, 2])
        rows, cols = op.Split(grid, num_outputs=2, _outputs=2)
        per_patch = op.Reshape(masks, op.Concat([0], rows, [patch], cols, [patch], axis=0))
        whole = op.Equal(op.ReduceSum(per_patch, [2, 4], keepdims=0), patch * patch)
        patch_mask = op.Reshape(whole, [0, -1])
        hidden, _ = self.vision_model(op, ImageInputs(images, pixel_attention_mask=patch_mask))
        features = self.connector(op, hidden, patch_mask)
        return op.Reshape(features, [-1, text.hidden_size])


FAMILIES = [
    Family(
        "idefics2",
        Idefics2Model,
        "a SigLIP-like tower over the processor's padded images (blank padding images dropped, "
        "part and padding patches masked and bucketed), a SwiGLU projection and a perceiver "
        "resampler (learned latents) into Mistral; image splitting included (vision.onnx, "
        "embedding.onnx, model.onnx; onnxruntime runs it, onnxruntime-genai has no Idefics 2 "
        "type)",
        ("HuggingFaceM4/idefics2-8b",),
        rules=Idefics2Rules(),
        task=VLM_TASK,
        category="vlm",
        renames=IDEFICS3_RENAMES,
    ),
]
