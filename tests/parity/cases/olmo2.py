"""Parity cases of converter/models/olmo2.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "olmo2": {**COMMON},
}
