"""Ovis2: a tiny AIMv2-style tower (32-pixel images of 4-pixel patches: an 8 x 8 grid merged
2 x 2 into 16 tokens) whose softmax over a 48-entry visual vocabulary looks up a visual table
(its last 5 rows the indicator tokens' embeddings, two of them in each prompt) for a tiny
Qwen2."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.internvl import TEXT

VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "image_size": 32,
    "patch_size": 4,
    "hidden_stride": 2,
    "vocab_size": 48,
    "qkv_bias": True,
}
BASE = {
    "model_type": "ovis2",
    "text_config": TEXT,
    "image_token_id": 300,
    "visual_indicator_token_ids": [301, 302, 303, 304, 305],
    "hidden_size": TEXT["hidden_size"],
    "vocab_size": TEXT["vocab_size"],
}

CASES = {
    # the head tied by the top-level tie_word_embeddings; merged 2 x 2 blocks
    "ovis2": VlmCase({**BASE, "vision_config": VISION}),
    # one patch a token, no biases, an untied head
    "ovis2:unmerged": VlmCase(
        {
            **BASE,
            "vision_config": {**VISION, "hidden_stride": 1, "qkv_bias": False},
            "tie_word_embeddings": False,
        }
    ),
}
