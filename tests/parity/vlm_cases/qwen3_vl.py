"""Qwen3-VL: a tiny tower (4-pixel patches, merge blocks of 2x2, a 4x4 learned position grid
resampled to the 8x8 and 4x6 test grids, DeepStack features of blocks 0 and 2) into a tiny
three-layer Qwen3 whose interleaved mrope sections sum to half its head size (DeepStack reaches
its first two layers)."""

from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "qwen3_vl_text",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 400,
    "max_position_embeddings": 512,
    "bos_token_id": 389,
    "eos_token_id": 389,  # <|endoftext|> of tests/tiny_vlm.py's tokenizer
    "rope_parameters": {
        "rope_type": "default",
        "mrope_section": [2, 3, 3],
        "mrope_interleaved": True,
        "rope_theta": 1e4,
    },
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
        {
            "model_type": "qwen3_vl",
            "text_config": TEXT,
            "vision_config": VISION,
            "image_token_id": 390,
            "video_token_id": 391,
            "vision_start_token_id": 392,
            "vision_end_token_id": 393,
        },
        inputs="patches",
    ),
}
# Cosmos3-Omni: the same model under its own type
CASES["cosmos3_omni"] = VlmCase(
    {**CASES["qwen3_vl"].config, "model_type": "cosmos3_omni"}, inputs="patches"
)
