"""Video-LLaVA's image path: LLaVA's tiny CLIP tower and Llama (tests/parity/vlm_cases/llava.py)
as its image tower; the video tower is in the checkpoint and left unread."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.llava import TEXT, VISION

CASES = {
    "video_llava": VlmCase(
        {
            "model_type": "video_llava",
            "text_config": TEXT,
            "vision_config": VISION,
            "image_token_id": 300,
            "video_token_id": 301,
        }
    ),
}
