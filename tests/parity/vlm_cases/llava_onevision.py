"""LLaVA-OneVision: a tiny SigLIP tower (28-pixel crops of 16 patch tokens) into a tiny Qwen2,
AnyRes-max at one crop's worth: the wide and tall images' maps (several crops) are shrunk
bilinearly, the small square one's (one crop) is not."""

from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "qwen2",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 320,
    "max_position_embeddings": 256,
}
VISION = {
    "model_type": "siglip_vision_model",
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 2,
    "image_size": 28,
    "patch_size": 7,
}
CASES = {
    "llava_onevision": VlmCase(
        {
            "model_type": "llava_onevision",
            "text_config": TEXT,
            "vision_config": VISION,
            "image_token_index": 300,
            "video_token_index": 301,
            "image_grid_pinpoints": [[28, 28], [28, 56], [56, 28], [56, 56], [28, 84], [84, 28]],
            "vision_aspect_ratio": "anyres_max_1",
            "vision_feature_layer": -2,
        },
        inputs="tiles",
    ),
}
