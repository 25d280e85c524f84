"""Qwen3-VL: a tiny tower (4-pixel patches, merge blocks of 2x2, a 4x4 learned position grid
resampled to the 8x8 and 4x6 test grids, DeepStack features of blocks 0 and 2) into a tiny
three-layer Qwen3 whose interleaved mrope sections sum to half its head size (DeepStack reaches
its first two layers)."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.qwen2_5_vl import TEXT as QWEN25_TEXT
from tests.parity.vlm_cases.qwen2_5_vl import TOKENS

TEXT = {
    **QWEN25_TEXT,
    "model_type": "qwen3_vl_text",
    "num_hidden_layers": 3,
    "head_dim": 16,
    "rope_parameters": {**QWEN25_TEXT["rope_parameters"], "mrope_interleaved": True},
}
VISION = {
    "depth": 3,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_heads": 2,
    "out_hidden_size": 64,
    "patch_size": 4,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "num_position_embeddings": 16,
    "deepstack_visual_indexes": [0, 2],
}
CASES = {
    "qwen3_vl": VlmCase(
        {"model_type": "qwen3_vl", "text_config": TEXT, "vision_config": VISION, **TOKENS},
        inputs="patches",
    ),
}
# Cosmos3-Omni: the same model under its own type
CASES["cosmos3_omni"] = VlmCase(
    {**CASES["qwen3_vl"].config, "model_type": "cosmos3_omni"}, inputs="patches"
)
