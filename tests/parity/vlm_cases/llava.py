"""LLaVA: a tiny CLIP tower (28-pixel images of 7-pixel patches: 16 image tokens once the class
token is dropped) into a tiny Llama."""

from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 320,
    "max_position_embeddings": 256,
}
VISION = {
    "model_type": "clip_vision_model",
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 2,
    "image_size": 28,
    "patch_size": 7,
}
BASE = {"model_type": "llava", "text_config": TEXT, "vision_config": VISION, "image_token_id": 300}

CASES = {
    "llava": VlmCase(BASE),
    # every hidden state of two layers, the class token kept
    "llava:layers": VlmCase(
        {**BASE, "vision_feature_layer": [0, -1], "vision_feature_select_strategy": "full"}
    ),
}
