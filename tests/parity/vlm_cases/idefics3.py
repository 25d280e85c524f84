"""Idefics 3: a tiny tower (50-pixel tiles of 2-pixel patches: a 25 x 25 grid, whose bucket
boundaries put some full-tile patches off their plain position, as transformers computes them)
shuffled 5 x 5 into 25 tokens a tile, into LLaVA's tiny Llama."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.llava import TEXT

VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "image_size": 50,
    "patch_size": 2,
}
CASES = {
    "idefics3": VlmCase(
        {
            "model_type": "idefics3",
            "text_config": TEXT,
            "vision_config": VISION,
            "image_token_id": 300,
            "scale_factor": 5,
        },
        inputs="tiles",
    ),
}
