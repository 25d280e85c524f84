"""Parity cases of converter/models/hrm_text.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

_HRM = {k: v for k, v in COMMON.items() if k != "num_key_value_heads"}
CASES = {
    # two layers per stack, two high cycles of two low cycles: 12 runs, each with its cache
    "hrm_text": {**_HRM, "head_dim": 16, "H_cycles": 2, "L_cycles": 2},
}
