"""Parity cases of converter/models/bitnet.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "bitnet": {**COMMON},
}
