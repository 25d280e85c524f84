"""LightOnOCR: Mistral 3's layout under other names. The Pixtral tower (`vision_encoder`) to its
last layer, the same projector (`vision_projection`: RMSNorm, the patch merger, linear_1, GELU,
linear_2, no biases) into Qwen3. No onnxruntime-genai type runs it: onnxruntime does."""

from __future__ import annotations

from converter.config.reader import ConfigReader
from converter.models.mistral3 import Mistral3Model, Mistral3Rules
from converter.models.pixtral import PixtralVisionConfig
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class LightOnOcrRules(Mistral3Rules):
    text_type = "qwen3"

    def read_extra(self, r: ConfigReader, text, vision: PixtralVisionConfig) -> dict:
        return {
            "feature_layer": vision.num_hidden_layers,
            "projector_act": "gelu",
            "projector_bias": False,
            "norm_eps": text.norm_eps,
            "tie_word_embeddings": r.bool("tie_word_embeddings", True),
        }


class LightOnOcrModel(Mistral3Model):
    image_prompt = None
    tower_name, projector_name = "vision_encoder", "vision_projection"


# transformers 5 saves its module names, all but the head under `model.`
LIGHTON_OCR_RENAMES = (
    (r"^model\.language_model\.", "language_model.model."),
    (r"^lm_head\.", "language_model.lm_head."),
    (r"^model\.(vision_encoder|vision_projection)\.", r"\1."),
)

FAMILIES = [
    Family(
        "lighton_ocr",
        LightOnOcrModel,
        "Mistral 3's Pixtral tower and patch-merging projector under other names, into Qwen3 "
        "(onnxruntime runs it, onnxruntime-genai has no LightOnOCR type)",
        ("lightonai/LightOnOCR-1B-1025",),
        rules=LightOnOcrRules(),
        task=VLM_TASK,
        category="vlm",
        renames=LIGHTON_OCR_RENAMES,
    ),
]
