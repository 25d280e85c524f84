"""Parity cases of converter/models/sarvam_moe.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # its defaults: full rotary, per-head q/k norms; a dense first layer, grouped sigmoid
    # routing scaled by 2.5, a shared expert
    "sarvam_moe": {
        **COMMON,
        "num_hidden_layers": 3,
        "head_dim": 16,
        "n_routed_experts": 16,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 16,
        "n_group": 4,
        "topk_group": 2,
        "n_shared_experts": 1,
        "first_k_dense_replace": 1,
    },
    # the original checkpoints' spellings: num_experts, num_shared_experts, use_qkv_bias;
    # no q/k norms, unnormalized weights
    "sarvam_moe:original_keys": {
        **COMMON,
        "head_dim": 32,
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 16,
        "num_shared_experts": 2,
        "first_k_dense_replace": 0,
        "use_qkv_bias": True,
        "use_qk_norm": False,
        "norm_topk_prob": False,
        "routed_scaling_factor": 1.5,
    },
}
