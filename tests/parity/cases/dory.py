"""Parity cases of converter/models/dory.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

_DORY = {
    **COMMON,
    "head_dim": 16,
    "num_hidden_layers": 4,
    "n_input_layers": 1,
    "n_output_layers": 1,
    "n_recurrent_loops": 3,
    "sliding_window": 4,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
}
CASES = {
    # one input layer, two recurrent layers run three times (a cache per loop), one output
    # layer; windows of 4 outgrown by the prompt; learned scales noised away from their init
    "dory": _DORY,
    # the recurrent layers' caches written by the last loop only, read by the earlier ones
    "dory:last_loop": {**_DORY, "recurrent_kv_cache_mode": "last_loop"},
    # no input layers, a tied head
    "dory:tied": {**_DORY, "n_input_layers": 0, "n_output_layers": 2, "tie_word_embeddings": True},
}
