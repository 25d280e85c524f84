"""Qwen3-VL-MoE: Qwen3-VL (converter/models/qwen3_vl.py: its tower, DeepStack, interleaved 3-D
rope) into Qwen3-MoE's decoder, whose experts the checkpoints store as stacks
(`mlp.experts.gate_up_proj`, `mlp.experts.down_proj`: converter/components/experts.py
EitherMajor) and whose router always renormalizes the top-k weights (transformers reads no
`norm_topk_prob` here)."""

from __future__ import annotations

from dataclasses import replace

from converter.components.experts import EitherMajor
from converter.components.moe import SparseMoe
from converter.models.decoder import DecoderLayer
from converter.models.qwen3_vl import DeepStackBody, DeepStackLM, Qwen3VlModel, Qwen3VlRules
from converter.models.qwen_vl import QWEN_VL_RENAMES
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class Qwen3VlMoeRules(Qwen3VlRules):
    text_type = "qwen3_vl_moe_text"
    text_family = "qwen3_moe"
    vision_type = "qwen3_vl_moe_vision"

    def read_text(self, raw, text_type):
        text = super().read_text(raw, text_type)
        return replace(text, moe=replace(text.moe, normalize=True))


class StackedExperts(SparseMoe):
    layout = EitherMajor("gate_up_proj", "down_proj")


class MoeLayer(DecoderLayer):
    moe_cls = StackedExperts


class MoeBody(DeepStackBody):
    layer_cls = MoeLayer


class MoeLM(DeepStackLM):
    body_cls = MoeBody


class Qwen3VlMoeModel(Qwen3VlModel):
    decoder_cls = MoeLM


FAMILIES = [
    Family(
        "qwen3_vl_moe",
        Qwen3VlMoeModel,
        "Qwen3-VL's tower (learned position grid, DeepStack) into Qwen3-MoE with stacked "
        "experts and interleaved 3-D multimodal rope",
        ("Qwen/Qwen3-VL-30B-A3B-Instruct",),
        rules=Qwen3VlMoeRules(),
        task=VLM_TASK,
        category="vlm",
        genai="qwen3_vl",
        renames=QWEN_VL_RENAMES,
    ),
]
