"""SmolVLM: Idefics 3's layout with another geometry (48-pixel tiles of 4-pixel patches, a
12 x 12 grid shuffled 3 x 3 into 16 tokens a tile) and its head tied to the token table."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.llava import TEXT

VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "image_size": 48,
    "patch_size": 4,
}
CASES = {
    "smolvlm": VlmCase(
        {
            "model_type": "smolvlm",
            "text_config": TEXT,
            "vision_config": VISION,
            "image_token_id": 300,
            "scale_factor": 3,
            "tie_word_embeddings": True,
        },
        inputs="tiles",
    ),
}
