"""Qwen3-VL-MoE: Qwen3-VL's tiny tower (tests/parity/vlm_cases/qwen3_vl.py) into a tiny
three-layer Qwen3-MoE (4 experts, 2 per token) whose middle layer is dense."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.qwen2_5_vl import TOKENS
from tests.parity.vlm_cases.qwen3_vl import TEXT, VISION

MOE_TEXT = {
    **TEXT,
    "model_type": "qwen3_vl_moe_text",
    "moe_intermediate_size": 16,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "mlp_only_layers": [1],
}
CASES = {
    "qwen3_vl_moe": VlmCase(
        {
            "model_type": "qwen3_vl_moe",
            "text_config": MOE_TEXT,
            "vision_config": {**VISION, "model_type": "qwen3_vl_moe_vision"},
            **TOKENS,
        },
        inputs="patches",
    ),
}
