"""DeepSeek-VL: a tiny SigLIP tower (28-pixel images of 7-pixel patches: 16 image tokens, with
the attention-pooling head the model drops) into a tiny Llama whose head is tied."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.llava import TEXT

VISION = {
    "model_type": "siglip_vision_model",
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "image_size": 28,
    "patch_size": 7,
}
CASES = {
    "deepseek_vl": VlmCase(
        {
            "model_type": "deepseek_vl",
            "text_config": TEXT,
            "vision_config": VISION,
            "image_token_id": 300,
        }
    ),
}
