"""Parity cases of converter/models/smollm3.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # layer 1 has no rotary embedding (interval 2)
    "smollm3": {**COMMON, "no_rope_layer_interval": 2},
    # layers 0 and 2 without rotary embedding, and those slide over 4 tokens
    "smollm3:nope_window": {
        **COMMON,
        "num_hidden_layers": 3,
        "no_rope_layers": [0, 1, 0],
        "use_sliding_window": True,
        "sliding_window": 4,
    },
}
