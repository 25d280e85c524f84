"""Parity cases of converter/models/exaone_moe.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

# 16 experts of width 16 in 4 groups of 4; each token picks 2 from its 2 best groups
EXPERTS = {
    "num_experts": 16,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "n_group": 4,
    "topk_group": 2,
    "head_dim": 16,
}

CASES = {
    # a dense first layer, then sliding, sliding (rope, window 4) and a full layer without
    # positions; grouped sigmoid routing renormalized and scaled by 2.5, one shared expert
    "exaone_moe": {
        **COMMON,
        **EXPERTS,
        "num_hidden_layers": 4,
        "first_k_dense_replace": 1,
        "sliding_window": 4,
        "sliding_window_pattern": 4,
    },
    # layer types given: a full layer (no positions) first; raw weights scaled by 1.5, two
    # shared experts, one group, experts in every layer
    "exaone_moe:raw": {
        **COMMON,
        **EXPERTS,
        "n_group": 1,
        "topk_group": 1,
        "first_k_dense_replace": 0,
        "sliding_window": 4,
        "layer_types": ["full_attention", "sliding_attention"],
        "norm_topk_prob": False,
        "routed_scaling_factor": 1.5,
        "num_shared_experts": 2,
    },
}
