"""Command A Vision: Aya Vision's tiny SigLIP tower and Cohere 2 (tests/parity/vlm_cases/
aya_vision.py), the tower's output through post_layernorm (its unused attention-pooling head
in the checkpoint) into a SwiGLU projector without a LayerNorm."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.aya_vision import TEXT, VISION

CASES = {
    "cohere2_vision": VlmCase(
        {
            "model_type": "cohere2_vision",
            "text_config": TEXT,
            "vision_config": {**VISION, "vision_use_head": True},
            "image_token_id": 300,
            "alignment_intermediate_size": 48,
        }
    ),
}
