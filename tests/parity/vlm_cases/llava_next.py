"""LLaVA-NeXT: LLaVA's tiny CLIP tower and Llama (28-pixel crops of 16 patch tokens) over
AnyRes grids of up to 3 crops, fed a wide and a tall image that pick different grids and lose
padding bands of different sides."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.llava import TEXT, VISION

CASES = {
    "llava_next": VlmCase(
        {
            "model_type": "llava_next",
            "text_config": TEXT,
            "vision_config": VISION,
            "image_token_id": 300,
            "image_grid_pinpoints": [[28, 56], [56, 28], [56, 56], [28, 84], [84, 28]],
        },
        inputs="tiles",
    ),
}
