"""HyperCLOVA X SEED Vision (v2): Qwen2.5-VL's vision tower (converter/models/qwen2_5_vl.py)
and a linear projector into HyperCLOVA X, over 1-D positions (transformers gives its decoder
no 3-D rope).

HyperCLOVA X scales inputs_embeds by its embedding_multiplier after the image features are
merged in, image rows too, which the decoder fed inputs_embeds does: the embedding graph
leaves them unscaled.
"""

from __future__ import annotations

import onnx_ir as ir

from converter.components import Linear
from converter.config.reader import ConfigReader
from converter.models.qwen2_5_vl import Qwen25VisionTransformer, Qwen25VlRules
from converter.models.qwen_vl import QwenVisionConfig, QwenVlModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class HyperClovaxVisionRules(Qwen25VlRules):
    text_type = "hyperclovax"
    text_family = None
    tie_from_text = False

    def read_extra(self, r: ConfigReader, text, vision: QwenVisionConfig) -> dict:
        return {}


class HyperClovaxVisionModel(QwenVlModel):
    mrope = False
    image_prompt = None
    scales_merged_embeds = True

    def make_vision(self, cfg, dtype: ir.DataType, ep) -> None:
        self.vision_model = Qwen25VisionTransformer(cfg.vision, dtype, ep)
        self.projector = Linear(cfg.vision.out_hidden_size, cfg.text.hidden_size, True, dtype)

    def image_features(self, op, image) -> ir.Value:
        merged = self.vision_model(op, image.pixel_values, image.image_grid_thw)
        return self.projector(op, merged)


# the Hub's layout (model.language_model.model., model.language_model.lm_head,
# model.vision_projector) and transformers 5's (model.language_model., lm_head, model.projector)
RENAMES = (
    (r"^(model\.language_model\.)?lm_head\.", "language_model.lm_head."),
    (r"^model\.language_model\.(model\.)?", "language_model.model."),
    (r"^model\.vision_projector\.", "projector."),
    (r"^model\.(vision_model|projector)\.", r"\1."),
)

FAMILIES = [
    Family(
        "hyperclovax_vision_v2",
        HyperClovaxVisionModel,
        "Qwen2.5-VL's vision tower and a linear projector, into HyperCLOVA X with 1-D positions",
        ("naver-hyperclovax/HyperCLOVAX-SEED-Think-32B",),
        rules=HyperClovaxVisionRules(),
        task=VLM_TASK,
        category="vlm",
        renames=RENAMES,
    ),
]
