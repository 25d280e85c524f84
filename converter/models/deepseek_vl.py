"""DeepSeek-VL (transformers' deepseek_vl; the hybrid's second, high-resolution tower is not
here): a SigLIP vision tower's last hidden states (every patch, after post_layernorm) through
DeepSeek's aligner (linear1, GELU, linear2) in place of the image tokens of Llama. The vision
graph takes fixed-size images: pixel_values [num_images, 3, image_size, image_size]."""

from __future__ import annotations

import onnx_ir as ir

from converter.config.reader import ConfigReader
from converter.config.two_tower import VisionTower
from converter.config.vision_language import VisionLanguageRules
from converter.models.llava import LlavaProjector, read_tower
from converter.models.siglip import SiglipVisionTransformer
from converter.models.vision_language import VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class DeepseekVlRules(VisionLanguageRules):
    text_type = "llama"
    vision_type = "siglip_vision_model"
    tie_from_text = False

    def read_vision(self, r: ConfigReader) -> VisionTower:
        return read_tower(r, "DeepSeek-VL", "siglip_text_model", self.vision_type)


class DeepseekVlAligner(LlavaProjector):
    names = ("linear1", "linear2")


class DeepseekVlModel(VisionLanguageModel):
    def make_vision(self, cfg, dtype: ir.DataType, ep) -> None:
        self.vision_model = SiglipVisionTransformer(cfg.vision, dtype, ep, pooled=False)
        hidden = cfg.text.hidden_size
        self.aligner = DeepseekVlAligner(cfg.vision.hidden_size, hidden, "gelu", True, dtype)

    def unused_tensors(self) -> tuple[str, ...]:
        # the attention-pooling head SiglipVisionModel computes and the model drops
        return (*super().unused_tensors(), r"vision_model\.head\..+")

    def image_features(self, op, image) -> ir.Value:
        hidden, _ = self.vision_model(op, image)
        return op.Reshape(self.aligner(op, hidden), [-1, self.cfg.text.hidden_size])


# checkpoints keep every part under `model.` but the head; the SigLIP tower under a second
# `vision_model.` where transformers 4's SiglipVisionModel wrapped it
DEEPSEEK_VL_RENAMES = (
    (r"^model\.language_model\.", "language_model.model."),
    (r"^lm_head\.", "language_model.lm_head."),
    (r"^model\.vision_model\.(vision_model\.)?", "vision_model."),
    (r"^model\.aligner\.", "aligner."),
)

FAMILIES = [
    Family(
        "deepseek_vl",
        DeepseekVlModel,
        "a SigLIP vision tower's last hidden states through DeepSeek's aligner MLP in place of "
        "the image tokens of Llama (vision.onnx, embedding.onnx, model.onnx; onnxruntime runs "
        "it)",
        ("deepseek-community/deepseek-vl-1.3b-chat",),
        rules=DeepseekVlRules(),
        task=VLM_TASK,
        category="vlm",
        renames=DEEPSEEK_VL_RENAMES,
    ),
]
