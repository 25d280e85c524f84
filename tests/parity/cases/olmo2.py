"""Parity cases of converter/models/olmo2.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "olmo2": {**COMMON},
    # layers 0-2 slide over 4 tokens, layer 3 is full; yarn scales the full layer's rope only
    "olmo3": {
        **COMMON,
        "num_hidden_layers": 4,
        "sliding_window": 4,
        "rope_parameters": {
            "full_attention": {
                "rope_type": "yarn",
                "rope_theta": 50_000.0,
                "factor": 4.0,
                "original_max_position_embeddings": 16,
            },
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
        },
    },
}
