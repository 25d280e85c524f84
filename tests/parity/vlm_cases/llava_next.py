"""LLaVA-NeXT: LLaVA's tiny CLIP tower and Llama (28-pixel crops of 16 patch tokens) over
AnyRes grids of up to 3 crops, fed a wide and a tall image that pick different grids and lose
padding bands of different sides, and a small square one. LLaVA-NeXT-Video's image path the
same, its checkpoint holding a video pooler the graphs do not read."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.llava import TEXT, VISION

BASE = {
    "model_type": "llava_next",
    "text_config": TEXT,
    "vision_config": VISION,
    "image_token_id": 300,
    "image_grid_pinpoints": [[28, 56], [56, 28], [56, 56], [28, 84], [84, 28]],
}
CASES = {
    "llava_next": VlmCase(BASE, inputs="crops"),
    "llava_next_video": VlmCase(
        {
            **BASE,
            "model_type": "llava_next_video",
            "video_token_id": 301,
            "spatial_pool_mode": "conv",
        },
        inputs="crops",
    ),
}
