"""Parity cases of converter/models/exaone.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "exaone": {**COMMON, "head_dim": 16, "tie_word_embeddings": True},
}
