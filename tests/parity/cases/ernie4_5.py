"""Parity cases of converter/models/ernie4_5.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "ernie4_5": {**COMMON, "head_dim": 16, "use_bias": True},
}
