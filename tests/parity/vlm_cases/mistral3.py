"""Mistral 3: a tiny Pixtral tower (4-pixel patches, merge blocks of 2x2) into a tiny Mistral
(or Ministral 3), fed two images of different sizes padded into one batch
(tests/parity/vlm_reference.py's "sized" inputs)."""

from tests.parity.cases.ministral3 import _ROPE as MINISTRAL3_ROPE
from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "mistral",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 320,
    "max_position_embeddings": 256,
    "sliding_window": None,
    "bos_token_id": 303,
    "eos_token_id": 303,  # </s> of tests/test_genai_mistral3.py's tokenizer
}
VISION = {
    "model_type": "pixtral",
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 2,
    "patch_size": 4,
    "hidden_act": "silu",
}
BASE = {
    "model_type": "mistral3",
    "text_config": TEXT,
    "vision_config": VISION,
    "image_token_index": 300,
    "spatial_merge_size": 2,
}

CASES = {
    "mistral3": VlmCase(BASE, inputs="sized"),
    # an earlier feature layer, a projector with biases, a head of its own
    "mistral3:layer": VlmCase(
        {
            **BASE,
            "vision_feature_layer": 1,
            "multimodal_projector_bias": True,
            "tie_word_embeddings": False,
        },
        inputs="sized",
    ),
    # Ministral 3's text model (yarn rope, queries scaled with the position)
    "mistral3:ministral3": VlmCase(
        {
            **BASE,
            "text_config": {**TEXT, "model_type": "ministral3", "rope_parameters": MINISTRAL3_ROPE},
        },
        inputs="sized",
    ),
}
