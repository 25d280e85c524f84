"""HyperCLOVA X SEED Vision: Qwen2.5-VL's tiny tower (tests/parity/vlm_cases/qwen2_5_vl.py)
merging into 48 wide, projected into a tiny HyperCLOVA X 64 wide with every multiplier set
(embeddings scaled after the image rows are merged in) over 1-D positions; the head tied to
the table by the top-level default."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.qwen2_5_vl import TOKENS, VISION

TEXT = {
    "model_type": "hyperclovax",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 400,
    "max_position_embeddings": 512,
    "embedding_multiplier": 2.0,
    "residual_multiplier": 0.8,
    "attention_multiplier": 0.3,
    "logits_scaling": 0.5,
    "bos_token_id": 389,
    "eos_token_id": 389,
}
CASES = {
    "hyperclovax_vision_v2": VlmCase(
        {
            "model_type": "hyperclovax_vision_v2",
            "text_config": TEXT,
            "vision_config": {**VISION, "model_type": "qwen2_5_vl", "out_hidden_size": 48},
            "image_token_id": TOKENS["image_token_id"],
            "video_token_id": TOKENS["video_token_id"],
        },
        inputs="patches",
        # where the prompt builder opens and closes an image (the config names neither)
        overrides={key: TOKENS[key] for key in ("vision_start_token_id", "vision_end_token_id")},
    ),
}
