"""Parity cases of converter/models/hyperclovax.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

_MUP = {
    "embedding_multiplier": 3.0,
    "residual_multiplier": 0.5,
    "attention_multiplier": 0.1,
    "logits_scaling": 4.0,
}
CASES = {
    "hyperclovax": {**COMMON, **_MUP},
    "hyperclovax:pre_norm": {**COMMON, **_MUP, "use_post_norm": False},
}
