"""Gemma 3: a tiny SigLIP tower (16-pixel images of 2-pixel patches: an 8 x 8 grid averaged
over 4 x 4 cells into 4 tokens) into a tiny gemma3_text whose sliding window (3) is shorter than
an image's run of tokens; two images in each prompt, so each run attends both ways within
itself only. ShieldGemma 2 is the same model under its own config."""

from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "gemma3_text",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "query_pre_attn_scalar": 16,
    "vocab_size": 320,
    "max_position_embeddings": 512,
    "eos_token_id": 303,  # <eos> of tests/test_genai_gemma3.py's tokenizer
    "sliding_window": 3,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
    "rope_parameters": {
        "full_attention": {"rope_type": "default", "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
    },
}
VISION = {
    "model_type": "siglip_vision_model",
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "image_size": 16,
    "patch_size": 2,
    "vision_use_head": False,
}
BASE = {
    "model_type": "gemma3",
    "text_config": TEXT,
    "vision_config": VISION,
    "mm_tokens_per_image": 4,
    "image_token_index": 300,
    "boi_token_index": 301,
    "eoi_token_index": 302,
}

CASES = {
    "gemma3": VlmCase(BASE, inputs="pixel_pairs", token_types="image"),
    # AutoModelForImageTextToText builds Gemma 3's model from ShieldGemma 2's config
    "shieldgemma2": VlmCase(
        {**BASE, "model_type": "shieldgemma2"}, inputs="pixel_pairs", token_types="image"
    ),
}
