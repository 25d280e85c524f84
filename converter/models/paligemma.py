"""PaliGemma (1 and 2): a SigLIP vision tower whose last hidden states (after post_layernorm), one
token per patch, go through one biased Linear (`multi_modal_projector.linear`, to
projection_dim = the text width) in place of the image tokens of Gemma (PaliGemma) or Gemma 2
(PaliGemma 2). The embedding graph scales the token rows by sqrt(hidden) as Gemma's scaled
word embedding does; the image features replace the image tokens' rows unscaled (transformers
5.24 scales neither further).

transformers counts positions from 1; rope turns queries and keys by the same offset, which
leaves every attention score as it is, so the decoder reads 0, 1, ... as any other. The prompt
is a prefix that attends to itself both ways (transformers does when given token_type_ids 0 on
the prompt, as its processor gives them): here the whole first call, the one without a cache,
is the prefix, and a Gemma 2 sliding layer lets the prefix see all of itself beyond its window
too, as transformers ORs the prefix block over its sliding mask. Every later token attends
causally. That mask is an explicit one, so the decoder runs the standard
Attention op on every EP. onnxruntime-genai has no PaliGemma type: onnxruntime runs the graphs
(vision once, the prompt's embeddings and decoder call, then a token a call)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.components.attention import StandardAttention
from converter.config.reader import ConfigReader
from converter.config.two_tower import VisionTower
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLM
from converter.models.gemma3 import GEMMA3_RENAMES, SIGLIP, read_siglip_tower
from converter.models.siglip import SiglipVisionTransformer
from converter.models.vision_language import Holder, VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK

TEXT_TYPES = ("gemma", "gemma2")


class PaliGemmaRules(VisionLanguageRules):
    text_type = "gemma"
    vision_type = SIGLIP

    def read_vision(self, r: ConfigReader) -> VisionTower:
        return read_siglip_tower(r)

    def read_extra(self, r: ConfigReader, text, vision: VisionTower) -> dict:
        if text.model_type not in TEXT_TYPES:
            raise ConfigError(
                f"text_config: 'model_type' = {text.model_type!r}: PaliGemma's decoder converts "
                f"as {' or '.join(TEXT_TYPES)} only"
            )
        projection = r.int("projection_dim")
        if projection != text.hidden_size:
            raise ConfigError(
                f"'projection_dim' = {projection} differs from the text model's 'hidden_size' = "
                f"{text.hidden_size}"
            )
        return {}


class PrefixBody(DecoderBody):
    gqa_refused = "the prompt attends to itself both ways, which needs an explicit mask"

    def make_kernel(self, op, inputs):
        past = op.Sub(
            op.Shape(inputs.attention_mask, start=1, end=2), op.Shape(inputs.tokens, start=1, end=2)
        )
        prompt = op.Reshape(op.Equal(past, 0), [1, 1, 1, 1])  # the call without a cache
        kernel = self.kernel
        return StandardAttention(
            op,
            kernel.dtype,
            inputs.tokens,
            inputs.attention_mask,
            inputs.position_ids,
            kernel.windows,
            prompt,
            window_bounds_together=False,
        )


class PrefixDecoder(DecoderLM):
    """Gemma's decoder, its prompt a two-way prefix."""

    body_cls = PrefixBody


class PaliGemmaModel(VisionLanguageModel):
    token_types = "prefix"

    def make_vision(self, cfg, dtype, ep) -> None:
        self.vision_tower = SiglipVisionTransformer(cfg.vision, dtype, ep, pooled=False)
        projector = Linear(cfg.vision.hidden_size, cfg.text.hidden_size, True, dtype)
        self.multi_modal_projector = Holder("linear", projector)

    def make_decoder(self, text, dtype, ep) -> nn.Module:
        return PrefixDecoder(text, dtype, ep)

    def unused_tensors(self) -> tuple[str, ...]:
        # the attention-pooling head of a tower saved with vision_use_head
        return (*super().unused_tensors(), r"vision_tower\.head\..+")

    def image_features(self, op, image) -> ir.Value:
        hidden, _ = self.vision_tower(op, image)
        features = self.multi_modal_projector(op, hidden)
        return op.Reshape(features, [-1, self.cfg.text.hidden_size])


FAMILIES = [
    Family(
        "paligemma",
        PaliGemmaModel,
        "a SigLIP tower's patches through one Linear in place of the image tokens of Gemma or "
        "Gemma 2, positions from 1, the prompt a prefix attending to itself both ways "
        "(onnxruntime runs it, onnxruntime-genai has no PaliGemma type)",
        ("google/paligemma-3b-mix-224", "google/paligemma2-3b-pt-224"),
        rules=PaliGemmaRules(),
        task=VLM_TASK,
        category="vlm",
        renames=GEMMA3_RENAMES,
    ),
]
