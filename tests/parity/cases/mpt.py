"""Parity cases of converter/models/mpt.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

_MPT = {
    "vocab_size": COMMON["vocab_size"],
    "d_model": 64,
    "n_heads": 4,
    "n_layers": 2,
    "max_seq_len": 64,
    "initializer_range": COMMON["initializer_range"],
}
CASES = {
    "mpt": {**_MPT, "attn_config": {"clip_qkv": 0.5, "softmax_scale": 0.2}},
    # six heads (MPT's slopes for a head count that is not a power of two), an untied head
    "mpt:six_heads": {
        **_MPT,
        "d_model": 96,
        "n_heads": 6,
        "tie_word_embeddings": False,
    },
}
