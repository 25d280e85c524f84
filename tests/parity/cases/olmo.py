"""Parity cases of converter/models/olmo.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "olmo": {**COMMON, "clip_qkv": 0.5},
}
