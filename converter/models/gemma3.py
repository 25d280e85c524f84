"""Gemma 3 (multimodal): a SigLIP vision tower whose last hidden states (after
post_layernorm), as a grid of patches, are averaged over square cells down to
`mm_tokens_per_image` tokens, normed (Gemma's (1 + w) RMSNorm, `mm_soft_emb_norm`) and
multiplied by `mm_input_projection_weight` into gemma3_text. The embedding graph scales the
token rows by sqrt(hidden) as Gemma's scaled word embedding does; the image features replace
the image tokens' rows unscaled.

An image's tokens attend each other both ways (transformers does when given token_type_ids, as
its processor always gives them, and onnxruntime-genai's processor makes them too): the
decoder reads input_ids beside inputs_embeds and lets the tokens of each run of image tokens
in the new chunk attend each other whatever their order, within a sliding layer's window
still; every other pair attends causally. That mask is an explicit one, so the decoder runs the
standard Attention op on every EP (GroupQueryAttention masks causally only)."""

from __future__ import annotations

from math import isqrt
from typing import ClassVar

import onnx_ir as ir
from onnxscript import nn

from converter.components import RMSNorm
from converter.components.attention import StandardAttention
from converter.config.reader import ConfigReader
from converter.config.two_tower import TwoTowerRules, VisionTower
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLM
from converter.models.siglip import SiglipVisionTransformer
from converter.models.vision_language import VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK

INT64 = ir.DataType.INT64
SIGLIP = "siglip_vision_model"


def read_siglip_tower(r: ConfigReader) -> VisionTower:
    tower = r.raw.get("model_type", SIGLIP)
    if tower != SIGLIP:
        raise ConfigError(f"'model_type' = {tower!r}: the vision tower converts as {SIGLIP} only")
    return TwoTowerRules("siglip_text_model", SIGLIP, projections=False).read_vision(r)


class Gemma3Rules(VisionLanguageRules):
    text_type = "gemma3_text"
    vision_type = SIGLIP

    def read_vision(self, r: ConfigReader) -> VisionTower:
        return read_siglip_tower(r)

    def read_extra(self, r: ConfigReader, text, vision: VisionTower) -> dict:
        text_raw = r.raw.get("text_config") or {}
        if text_raw.get("use_bidirectional_attention"):
            raise ConfigError(
                "text_config: 'use_bidirectional_attention' = True (an embedding model's text "
                "attention) is not supported: the decoder generates causally"
            )
        tokens = r.int("mm_tokens_per_image")
        side = isqrt(tokens)
        patches = vision.image_size // vision.patch_size
        if side * side != tokens or patches % side:
            raise ConfigError(
                f"'mm_tokens_per_image' = {tokens} must be the square of a divisor of the "
                f"tower's {patches} patches a side (cells of whole patches are averaged)"
            )
        return {"patches": patches, "cell": patches // side}


class Gemma3Projector(nn.Module):
    """The patch grid averaged over `cell` x `cell` squares, mm_soft_emb_norm, then a MatMul
    by mm_input_projection_weight [vision width, text width]."""

    def __init__(self, vision: VisionTower, text_width: int, patches: int, cell: int, dtype):
        super().__init__()
        width = vision.hidden_size
        self.mm_input_projection_weight = nn.Parameter([width, text_width], dtype)
        self.mm_soft_emb_norm = RMSNorm(width, vision.norm_eps, dtype, offset=1.0)
        self.width, self.patches, self.cell = width, patches, cell

    def expected_fusions(self, plan) -> dict[str, int]:
        return plan.quantized_matmuls()  # the projection, as a Linear's

    def forward(self, op, x):
        grid = op.Reshape(op.Transpose(x, perm=[0, 2, 1]), [0, self.width, self.patches, -1])
        cells = [self.cell, self.cell]
        pooled = op.AveragePool(grid, kernel_shape=cells, strides=cells)
        tokens = op.Transpose(op.Reshape(pooled, [0, self.width, -1]), perm=[0, 2, 1])
        return op.MatMul(self.mm_soft_emb_norm(op, tokens), self.mm_input_projection_weight)


def image_blocks_together(op, input_ids, attention_mask, image_token_id: int):
    """bool [batch, 1, sequence, total]: the new tokens of one run of image tokens, each with
    every other of its run (cached tokens belong to no run: transformers gives the image blocks
    only with the prompt)."""
    is_image = op.Equal(input_ids, image_token_id)
    image = op.Cast(is_image, to=INT64)
    before = op.Slice(op.Pad(image, op.Constant(value_ints=[0, 1, 0, 0])), [0], [-1], [1])
    starts = op.Cast(op.Greater(image, before), to=INT64)  # the first token of each run
    runs = op.Where(is_image, op.Sub(op.CumSum(starts, 1), 1), -1)
    past = op.Sub(op.Shape(attention_mask, start=1, end=2), op.Shape(input_ids, start=1, end=2))
    batch = op.Shape(input_ids, end=1)
    cached = op.Expand(op.Constant(value_int=-2), op.Concat(batch, past, axis=0))
    keys = op.Unsqueeze(op.Concat(cached, runs, axis=1), [1, 2])  # [batch, 1, 1, total]
    queries = op.Unsqueeze(runs, [1, 3])  # [batch, 1, sequence, 1]
    return op.And(op.Equal(queries, keys), op.GreaterOrEqual(queries, 0))


class ImageBlockBody(DecoderBody):
    gqa_refused = "an image's tokens attend each other both ways, which needs an explicit mask"
    image_token_id = -1  # set by the decoder that owns it

    def make_kernel(self, op, inputs):
        together = image_blocks_together(
            op, inputs.input_ids, inputs.attention_mask, self.image_token_id
        )
        kernel = self.kernel
        return StandardAttention(
            op,
            kernel.dtype,
            inputs.tokens,
            inputs.attention_mask,
            inputs.position_ids,
            kernel.windows,
            together,
        )


class ImageBlockDecoder(DecoderLM):
    """The text family's decoder whose image tokens attend within their run both ways."""

    body_cls = ImageBlockBody

    def __init__(self, cfg, dtype, ep, image_token_id: int):
        super().__init__(cfg, dtype, ep)
        self.body.image_token_id = image_token_id


class Gemma3Model(VisionLanguageModel):
    decoder_reads_ids = True
    token_types = "image"
    image_prompt = "<start_of_image>"  # genai expands it into the image's soft tokens

    def make_vision(self, cfg, dtype, ep) -> None:
        self.vision_tower = SiglipVisionTransformer(cfg.vision, dtype, ep, pooled=False)
        extra = cfg.extra
        self.multi_modal_projector = Gemma3Projector(
            cfg.vision, cfg.text.hidden_size, extra["patches"], extra["cell"], dtype
        )

    def make_decoder(self, text, dtype, ep) -> nn.Module:
        return ImageBlockDecoder(text, dtype, ep, self.cfg.image_token_id)

    def unused_tensors(self) -> tuple[str, ...]:
        # the attention-pooling head of a tower saved with vision_use_head
        return (*super().unused_tensors(), r"vision_tower\.head\..+")

    def image_features(self, op, image) -> ir.Value:
        hidden, _ = self.vision_tower(op, image)
        features = self.multi_modal_projector(op, hidden)
        return op.Reshape(features, [-1, self.cfg.text.hidden_size])


# transformers 4 saved `language_model.model.`, `vision_tower.vision_model.`,
# `multi_modal_projector.` (and no head: tied); transformers 5 puts them under `model.`
GEMMA3_RENAMES = (
    (r"^model\.language_model\.", "language_model.model."),
    (r"^lm_head\.", "language_model.lm_head."),
    (r"^model\.vision_tower\.vision_model\.", "vision_tower."),
    (r"^vision_tower\.vision_model\.", "vision_tower."),
    (r"^model\.multi_modal_projector\.", "multi_modal_projector."),
)


class ShieldGemma2Model(Gemma3Model):
    """Gemma 3's layout: ShieldGemma2ForImageClassification is the Gemma 3 model reading the
    yes and no tokens' logits at the last position, which the decoder's logits hold."""

    head_tasks: ClassVar[dict[str, str]] = {
        **Gemma3Model.head_tasks,
        "ForImageClassification": VLM_TASK,
    }


# ShieldGemma2ForImageClassification keeps the Gemma 3 model one `model.` deeper: transformers
# 4 as `model.language_model.model.`, `model.vision_tower.vision_model.`, ...; transformers 5
# saves `model.model.language_model.model.`, `model.model.vision_tower.`, ...
SHIELDGEMMA2_RENAMES = (
    (r"^model\.model\.", "model."),
    (r"^model\.language_model\.(model|lm_head)\.", r"language_model.\1."),
    (r"^model\.lm_head\.", "lm_head."),
    *GEMMA3_RENAMES,
    (r"^model\.vision_tower\.", "vision_tower."),
)

FAMILIES = [
    Family(
        "gemma3",
        Gemma3Model,
        "a SigLIP tower's patches averaged to mm_tokens_per_image, normed and projected in "
        "place of the image tokens of gemma3_text, whose image tokens attend each other both "
        "ways",
        ("google/gemma-3-4b-it",),
        rules=Gemma3Rules(),
        task=VLM_TASK,
        category="vlm",
        genai="gemma3",
        renames=GEMMA3_RENAMES,
    ),
    Family(
        "shieldgemma2",
        ShieldGemma2Model,
        "Gemma 3's layout as an image safety classifier: the yes and no tokens' logits at the "
        "prompt's last position",
        ("google/shieldgemma-2-4b-it",),
        rules=Gemma3Rules(),
        task=VLM_TASK,
        category="vlm",
        genai="gemma3",
        renames=SHIELDGEMMA2_RENAMES,
    ),
]
