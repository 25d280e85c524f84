"""EXAONE 4.5: Qwen2.5-VL's tiny tower (tests/parity/vlm_cases/qwen2_5_vl.py) with 4 query heads
sharing 2 key/value heads, into a tiny EXAONE 4 (a sliding layer, then a global one) over
1-D positions."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.qwen2_5_vl import TOKENS, VISION

TEXT = {
    "model_type": "exaone4",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 400,
    "max_position_embeddings": 512,
    "sliding_window": 8,
    "layer_types": ["sliding_attention", "full_attention"],
    "bos_token_id": 389,
    "eos_token_id": 389,
}
CASES = {
    "exaone4_5": VlmCase(
        {
            "model_type": "exaone4_5",
            "text_config": TEXT,
            "vision_config": {
                **VISION,
                "hidden_size": 64,
                "num_heads": 4,
                "num_key_value_heads": 2,
            },
            "image_token_id": TOKENS["image_token_id"],
            "video_token_id": TOKENS["video_token_id"],
        },
        inputs="patches",
        # where the prompt builder opens and closes an image (EXAONE 4.5's config names neither)
        overrides={key: TOKENS[key] for key in ("vision_start_token_id", "vision_end_token_id")},
    ),
}
