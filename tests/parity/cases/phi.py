"""Parity cases of converter/models/phi.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "phi": {
        **COMMON,
        "num_key_value_heads": 4,
        "partial_rotary_factor": 0.5,
        "qk_layernorm": True,
    },
}
