"""Parity cases of converter/models/nanochat.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "nanochat": {**COMMON, "final_logit_softcapping": 15.0},
}
