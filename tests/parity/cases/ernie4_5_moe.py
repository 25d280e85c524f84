"""Parity cases of converter/models/ernie4_5_moe.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

EXPERTS = {"moe_num_experts": 8, "moe_k": 2, "moe_intermediate_size": 32, "head_dim": 16}

CASES = {
    # experts in layers 1 and 3 of 4 (from 1, every 2nd, to the last), a shared expert,
    # biases everywhere (the tied head's too)
    "ernie4_5_moe": {
        **COMMON,
        **EXPERTS,
        "num_hidden_layers": 4,
        "moe_layer_start_index": 1,
        "moe_layer_interval": 2,
        "moe_num_shared_experts": 1,
        "use_bias": True,
    },
    # experts in layer 0 only (the end index), no shared expert, an untied head
    "ernie4_5_moe:untied": {
        **COMMON,
        **EXPERTS,
        "moe_layer_start_index": 0,
        "moe_layer_end_index": 0,
        "moe_num_shared_experts": 0,
        "tie_word_embeddings": False,
    },
}
