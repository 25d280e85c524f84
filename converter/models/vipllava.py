"""VipLLaVA: LLaVA whose projector reads several CLIP layers' hidden states at once
(`vision_feature_layers`, the class token always dropped, concatenated) through a LayerNorm
before linear_1, the activation and linear_2, into Llama."""

from __future__ import annotations

import onnx_ir as ir

from converter.components import LayerNorm
from converter.config.reader import ConfigReader
from converter.config.two_tower import VisionTower
from converter.models.llava import (
    LLAVA_RENAMES,
    LlavaModel,
    LlavaProjector,
    LlavaRules,
    feature_layers,
)
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class VipLlavaRules(LlavaRules):
    tie_from_text = False

    def read_extra(self, r: ConfigReader, text, vision: VisionTower) -> dict:
        return {
            # checkpoints before transformers 5 spell it vision_feature_layers
            "feature_layers": feature_layers(
                r, vision.num_hidden_layers, ("vision_feature_layers", "vision_feature_layer")
            ),
            "drop_class_token": True,
            "projector_act": r.str("projector_hidden_act"),
            "projector_bias": True,
            "projector_norm_eps": r.float("projector_layernorm_eps"),
        }


class VipLlavaProjector(LlavaProjector):
    def __init__(self, width: int, hidden: int, act: str, eps: float, dtype: ir.DataType):
        super().__init__(width, hidden, act, True, dtype)
        self.projector_layernorm = LayerNorm(width, eps, dtype)

    def forward(self, op, x):
        return super().forward(op, self.projector_layernorm(op, x))


class VipLlavaModel(LlavaModel):
    def make_projector(self, cfg, width: int, dtype: ir.DataType) -> VipLlavaProjector:
        extra = cfg.extra
        return VipLlavaProjector(
            width, cfg.text.hidden_size, extra["projector_act"], extra["projector_norm_eps"], dtype
        )


FAMILIES = [
    Family(
        "vipllava",
        VipLlavaModel,
        "LLaVA with several CLIP layers' hidden states concatenated through a LayerNorm "
        "projector (vision.onnx, embedding.onnx, model.onnx; onnxruntime runs it)",
        ("llava-hf/vip-llava-7b-hf",),
        rules=VipLlavaRules(),
        task=VLM_TASK,
        category="vlm",
        renames=LLAVA_RENAMES,
    ),
]
