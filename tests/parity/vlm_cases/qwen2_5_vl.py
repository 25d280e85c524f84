"""Qwen2.5-VL: a tiny tower (4-pixel patches, merge blocks of 2x2, windows of 2x2 merge blocks,
full attention in block 1) into a tiny Qwen2 whose mrope sections sum to half its head size."""

from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "qwen2_5_vl_text",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 400,
    "max_position_embeddings": 512,
    "bos_token_id": 389,
    "eos_token_id": 389,  # <|endoftext|> of tests/tiny_vlm.py's tokenizer
    "rope_parameters": {"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e4},
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
    "window_size": 16,
    "fullatt_block_indexes": [1],
}
# Qwen-VL's special tokens at tests/tiny_vlm.py's ids
TOKENS = {
    "image_token_id": 390,
    "video_token_id": 391,
    "vision_start_token_id": 392,
    "vision_end_token_id": 393,
}
CASES = {
    "qwen2_5_vl": VlmCase(
        {"model_type": "qwen2_5_vl", "text_config": TEXT, "vision_config": VISION, **TOKENS},
        inputs="patches",
    ),
}
