"""Parity cases of converter/models/bloom.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

_BLOOM = {
    key: COMMON[key]
    for key in ("vocab_size", "hidden_size", "initializer_range", "bos_token_id", "eos_token_id")
}
CASES = {
    "bloom": {**_BLOOM, "n_layer": 2, "n_head": 4, "pad_token_id": 0},
    # six heads: the slopes of a head count that is not a power of two; the residual after
    # the norms; an untied head
    "bloom:residual_after_norm": {
        **_BLOOM,
        "hidden_size": 96,
        "n_layer": 2,
        "n_head": 6,
        "apply_residual_connection_post_layernorm": True,
        "tie_word_embeddings": False,
    },
}
