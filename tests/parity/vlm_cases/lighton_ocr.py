"""LightOnOCR: Mistral 3's tiny Pixtral tower (its rope at another base) into a tiny Qwen3
(qk-norm), fed two images of different sizes padded into one batch."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.mistral3 import TEXT, VISION

CASES = {
    "lighton_ocr": VlmCase(
        {
            "model_type": "lighton_ocr",
            "text_config": {**TEXT, "model_type": "qwen3", "sliding_window": None},
            "vision_config": {**VISION, "rope_parameters": {"rope_theta": 500.0}},
            "image_token_id": 300,
            "spatial_merge_size": 2,
        },
        inputs="sized",
    ),
}
