"""Parity cases of converter/models/helium.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "helium": {**COMMON, "head_dim": 16, "attention_bias": True, "mlp_bias": True},
}
