"""LLaVA-OneVision: LLaVA-NeXT (converter/models/llava_next.py) with a SigLIP tower (no class
token: every token of the chosen hidden states is a patch) into Qwen2, and AnyRes-max: an
image's unpadded map holding more than N crops' worth of tokens (`vision_aspect_ratio`
"anyres_max_N") is shrunk bilinearly to about N before its newlines. The vision graph also
takes the processor's `batch_num_images` (each prompt's image count): the images of a prompt of
several are their base crop and one newline. Images only: the embedding graph places image
tokens, not video tokens."""

from __future__ import annotations

import re

import onnx_ir as ir
from onnxscript import nn

from converter.components.encoder_attention import encoder_attention
from converter.config.reader import ConfigReader
from converter.config.two_tower import VisionTower
from converter.errors import ConfigError
from converter.models.anyres import segment_of
from converter.models.llava_next import LLAVA_NEXT_RENAMES, LlavaNextModel, LlavaNextRules
from converter.models.siglip import SiglipVisionEmbeddings
from converter.models.tower import TowerEncoder
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK
from converter.tasks.zero_shot import ImageInputs

CROP = 384  # LlavaOnevisionConfig's pinpoints when config.json has none: 1 to 6 crops a side
DEFAULT_PINPOINTS = [[h * CROP, w * CROP] for h in range(1, 7) for w in range(1, 7)]


class LlavaOnevisionRules(LlavaNextRules):
    text_type = "qwen2"
    vision_type = "siglip_vision_model"
    class_token = False
    default_pinpoints = DEFAULT_PINPOINTS

    def read_extra(self, r: ConfigReader, text, vision) -> dict:
        extra = super().read_extra(r, text, vision)
        ratio = r.str("vision_aspect_ratio")
        most = re.fullmatch(r"anyres_max_([1-9][0-9]{0,3})", ratio)
        if most is None:
            raise ConfigError(
                f"'vision_aspect_ratio' = {ratio!r} is not 'anyres_max_N' (N from 1 to 9999)"
            )
        return {**extra, "max_crops": int(most.group(1))}


class SiglipStatesTower(nn.Module):
    """SigLIP's vision embeddings and stack run to the deepest feature layer, returning every
    hidden state (the embeddings, then each layer's output)."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType, ep):
        super().__init__()
        self.embeddings = SiglipVisionEmbeddings(cfg, dtype)
        self.encoder = TowerEncoder(cfg, dtype)
        self.ep, self.dtype = ep, dtype

    def forward(self, op, pixels) -> list[ir.Value]:
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        x = self.embeddings(op, ImageInputs(pixels))
        states = [x]
        self.encoder(op, x, kernel, states)
        return states


class LlavaOnevisionModel(LlavaNextModel):
    image_layout = "prompt_crops"
    tower_cls = SiglipStatesTower
    tower_unused = (r"vision_tower\.post_layernorm\..+", r"vision_tower\.head\..+")

    def tiled(self, op, image) -> ir.Value:
        """A prompt's only image is tiled; the images of a prompt of several are not."""
        per_prompt = image.batch_num_images
        images = op.Squeeze(op.Shape(image.image_sizes, start=0, end=1), [0])
        prompt = segment_of(op, op.Range(0, images, 1), per_prompt)
        return op.Equal(op.Gather(per_prompt, prompt, axis=0), 1)


FAMILIES = [
    Family(
        "llava_onevision",
        LlavaOnevisionModel,
        "LLaVA-NeXT's AnyRes with a SigLIP tower into Qwen2, each image's unpadded map shrunk "
        "bilinearly to about N crops' worth (anyres_max_N), a prompt of several images "
        "reading their base crops only (batch_num_images); images only, videos are not "
        "converted (onnxruntime runs it, onnxruntime-genai has no LLaVA-OneVision type)",
        ("llava-hf/llava-onevision-qwen2-0.5b-ov-hf",),
        rules=LlavaOnevisionRules(),
        task=VLM_TASK,
        category="vlm",
        renames=LLAVA_NEXT_RENAMES,
    ),
]
