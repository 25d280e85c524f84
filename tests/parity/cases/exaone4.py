"""Parity cases of converter/models/exaone4.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # sliding, sliding, global (NoPE) by the pattern
    "exaone4": {
        **COMMON,
        "num_hidden_layers": 3,
        "head_dim": 16,
        "sliding_window": 4,
        "sliding_window_pattern": 3,
    },
    # no sliding window: every layer full and rotated
    "exaone4:full": {
        **COMMON,
        "head_dim": 16,
        "sliding_window": None,
        "layer_types": ["full_attention", "full_attention"],
    },
}
