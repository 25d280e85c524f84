"""VideoLLaMA 3: a tiny tower (4-pixel patches, head size 16) into a tiny Qwen2, fed images of
merge sizes 1, 2 (two frames) and 3."""

from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "qwen2",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 400,
    "max_position_embeddings": 512,
}
VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "patch_size": 4,
}
CASES = {
    "video_llama_3": VlmCase(
        {
            "model_type": "video_llama_3",
            "text_config": TEXT,
            "vision_config": VISION,
            "image_token_id": 390,
            "video_token_id": 391,
        },
        inputs="merged_patches",
    ),
}
