"""LLaVA-OneVision: a tiny SigLIP tower (28-pixel crops of 16 patch tokens) into a tiny Qwen2,
AnyRes-max at one crop's worth: the wide and tall images' maps (several crops) are shrunk
bilinearly, the small square one's (one crop) is not."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.llava import TEXT, VISION

CASES = {
    "llava_onevision": VlmCase(
        {
            "model_type": "llava_onevision",
            "text_config": {**TEXT, "model_type": "qwen2"},
            "vision_config": {**VISION, "model_type": "siglip_vision_model"},
            "image_token_index": 300,
            "video_token_index": 301,
            "image_grid_pinpoints": [[28, 28], [28, 56], [56, 28], [56, 56], [28, 84], [84, 28]],
            "vision_aspect_ratio": "anyres_max_1",
            "vision_feature_layer": -2,
        },
        inputs="crops",
    ),
}
