"""Parity cases of converter/models/afmoe.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

AFMOE = {
    **COMMON,
    "num_hidden_layers": 4,
    "head_dim": 16,
    "moe_intermediate_size": 32,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "num_shared_experts": 1,
    "num_dense_layers": 1,
}

CASES = {
    # sliding (rotary) and global (NoPE) layers alternating, window 4 inside the prompt;
    # a dense first layer, then sigmoid routing with its bias, scaled by route_scale
    "afmoe": {**AFMOE, "sliding_window": 4, "global_attn_every_n_layers": 2, "route_scale": 2.5},
    # muP-scaled embeddings, biased attention, two shared experts, top-3 of 8
    "afmoe:mup": {
        **AFMOE,
        "sliding_window": 16,
        "mup_enabled": True,
        "attention_bias": True,
        "num_shared_experts": 2,
        "num_experts_per_tok": 3,
    },
}
