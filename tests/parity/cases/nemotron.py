"""Parity cases of converter/models/nemotron.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # rotary on 8 of 16 dims, outside the cpu GroupQueryAttention
    "nemotron": {**COMMON},
    # heads of 32 (16 rotated dims, inside GroupQueryAttention), biased attention and MLP
    "nemotron:rotary16-biases": {
        **COMMON,
        "head_dim": 32,
        "attention_bias": True,
        "mlp_bias": True,
    },
}
