"""Parity cases of converter/models/jais2.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "jais2": {**COMMON, "head_dim": 16},
}
