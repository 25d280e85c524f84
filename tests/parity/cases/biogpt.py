"""Parity cases of converter/models/biogpt.py: tiny random configs, one per twist."""

from tests.parity.common import MULTI_HEAD

CASES = {
    "biogpt": {**MULTI_HEAD, "layer_norm_eps": 1e-12},
    "biogpt:unscaled": {
        **MULTI_HEAD,
        "scale_embedding": False,
        "tie_word_embeddings": False,
    },
}
