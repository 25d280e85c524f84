"""Parity cases of converter/models/gemma3n.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

# five layers, the last two reusing the keys and values of layers 1 (sliding) and 2 (full);
# three AltUp streams; a per-layer token table smaller than the vocabulary (ids past it read
# row 0); MLPs of two sizes; windows of 4
_GEMMA3N = {
    **COMMON,
    "num_hidden_layers": 5,
    "head_dim": 16,
    "intermediate_size": [96, 64, 96, 64, 96],
    "activation_sparsity_pattern": [0.0] * 5,
    "sliding_window": 4,
    "layer_types": [
        "sliding_attention",
        "sliding_attention",
        "full_attention",
        "sliding_attention",
        "full_attention",
    ],
    "num_kv_shared_layers": 2,
    "vocab_size_per_layer_input": 96,
    "hidden_size_per_layer_input": 8,
    "laurel_rank": 4,
    "altup_num_inputs": 3,
    "final_logit_softcapping": 5.0,
}
CASES = {
    "gemma3n_text": _GEMMA3N,
    # sparse MLPs in two layers (a variant: their hard cutoff turns the int8 activation
    # rounding of cpu int4 graphs into larger changes than the int4 bounds allow)
    "gemma3n_text:sparse": {
        **_GEMMA3N,
        "activation_sparsity_pattern": [0.95, 0.0, 0.95, 0.0, 0.0],
        "altup_correct_scale": False,
    },
}
