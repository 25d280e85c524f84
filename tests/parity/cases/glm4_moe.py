"""Parity cases of converter/models/glm4_moe.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

# 16 experts of width 16 in 4 groups of 4; each token picks 2 experts from its 2 best groups
# (8 experts to pick from: transformers' default top-k still fits)
GROUPED = {
    "n_routed_experts": 16,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "n_group": 4,
    "topk_group": 2,
    "n_shared_experts": 1,
}

CASES = {
    # a dense first layer, grouped sigmoid routing scaled by 2.5, partial rotary (half of 16)
    "glm4_moe": {
        **COMMON,
        **GROUPED,
        "num_hidden_layers": 3,
        "head_dim": 16,
        "first_k_dense_replace": 1,
        "routed_scaling_factor": 2.5,
        "attention_bias": True,
    },
    # per-head q/k norms, raw (unnormalized) weights, one group, two shared experts
    "glm4_moe:qk_norm": {
        **COMMON,
        **GROUPED,
        "head_dim": 32,
        "n_group": 1,
        "topk_group": 1,
        "n_shared_experts": 2,
        "first_k_dense_replace": 0,
        "use_qk_norm": True,
        "norm_topk_prob": False,
    },
    # a dense first layer, a sliding last layer (window 4), grouped routing, biased attention
    "dots1": {
        **COMMON,
        **GROUPED,
        "num_hidden_layers": 3,
        "head_dim": 16,
        "first_k_dense_replace": 1,
        "sliding_window": 4,
        "max_window_layers": 2,
        "routed_scaling_factor": 1.5,
        "attention_bias": True,
    },
    # experts in every layer, grouped routing scaled by 2, q/k/v biases, full rotary
    "solar_open": {
        **COMMON,
        **GROUPED,
        "head_dim": 16,
        "routed_scaling_factor": 2.0,
        "attention_bias": True,
    },
}
