"""Qwen2-VL: a tiny tower (4-pixel patches, merge blocks of 2x2, every block attending within
its frame) into a tiny Qwen2 whose mrope sections sum to half its head size."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.qwen2_5_vl import TEXT, TOKENS

VISION = {
    "depth": 2,
    "embed_dim": 32,
    "mlp_ratio": 2,
    "num_heads": 2,
    "hidden_size": 64,
    "patch_size": 4,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
}
CASES = {
    "qwen2_vl": VlmCase(
        {
            "model_type": "qwen2_vl",
            "text_config": {**TEXT, "model_type": "qwen2_vl_text"},
            "vision_config": VISION,
            **TOKENS,
        },
        inputs="patches",
    ),
}
