"""Parity cases of converter/models/arcee.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "arcee": {**COMMON, "head_dim": 16, "mlp_bias": True},
}
