"""VipLLaVA: LLaVA's tiny CLIP tower and Llama (tests/parity/vlm_cases/llava.py), three of its
hidden states (the embeddings, a middle and the last layer) through the LayerNorm projector."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.llava import TEXT, VISION

CASES = {
    "vipllava": VlmCase(
        {
            "model_type": "vipllava",
            "text_config": TEXT,
            "vision_config": VISION,
            "image_token_id": 300,
            "vision_feature_layer": [-1, 0, 2],
            "projector_layernorm_eps": 1e-4,
        }
    ),
}
