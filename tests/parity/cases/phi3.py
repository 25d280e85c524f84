"""Parity cases of converter/models/phi3.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "phi3": {
        **COMMON,
        "num_key_value_heads": 4,
        "partial_rotary_factor": 0.5,
        "max_position_embeddings": 32,
        "original_max_position_embeddings": 8,
        "rope_scaling": {
            "type": "longrope",
            "short_factor": [1.0, 1.1, 1.3, 1.7],
            "long_factor": [1.5, 2.5, 4.0, 6.0],
        },
    },
    "phi3:window16": {**COMMON, "num_key_value_heads": 4, "sliding_window": 4},
}
