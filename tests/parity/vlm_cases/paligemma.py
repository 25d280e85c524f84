"""PaliGemma: a tiny SigLIP tower (8-pixel images of 2-pixel patches: 16 image tokens) into a
tiny Gemma, and PaliGemma 2's into a tiny Gemma 2 whose sliding window (3) is shorter than the
prompt, which transformers' prefix mask reaches beyond."""

from tests.parity.vlm_cases import VlmCase

GEMMA = {
    "model_type": "gemma",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "vocab_size": 320,
    "max_position_embeddings": 256,
}
GEMMA2 = {
    **GEMMA,
    "model_type": "gemma2",
    "num_hidden_layers": 3,
    "query_pre_attn_scalar": 16,
    "sliding_window": 3,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
}
VISION = {
    "model_type": "siglip_vision_model",
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "image_size": 8,
    "patch_size": 2,
    "vision_use_head": False,
}
BASE = {
    "model_type": "paligemma",
    "text_config": GEMMA,
    "vision_config": VISION,
    "image_token_index": 300,
    "projection_dim": 64,
    "hidden_size": 64,
    "vocab_size": 320,
}

CASES = {
    "paligemma": VlmCase(BASE, token_types="prefix"),
    "paligemma:gemma2": VlmCase({**BASE, "text_config": GEMMA2}, token_types="prefix"),
}
