"""Parity cases of converter/models/minimax_m2.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # sigmoid routing with its correction bias; 8 of 16 dims rotated (`rotary_dim`)
    "minimax_m2": {
        **COMMON,
        "head_dim": 16,
        "rotary_dim": 8,
        "intermediate_size": 32,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
    },
}
