"""Parity cases of the mixture-of-experts families: experts in every layer or some, shared
experts, renormalized or raw top-k weights."""

from tests.parity.common import COMMON

# 8 experts of width 32, each token picking 2
EXPERTS = {"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32}

CASES = {
    "mixtral": {**COMMON, "num_local_experts": 8, "num_experts_per_tok": 2, "head_dim": 16},
    "olmoe": {**COMMON, **EXPERTS, "intermediate_size": 32, "head_dim": 16},
    # a dense layer between sparse ones; raw (unnormalized) top-k weights
    "qwen3_moe": {
        **COMMON,
        **EXPERTS,
        "num_hidden_layers": 3,
        "head_dim": 16,
        "mlp_only_layers": [1],
        "norm_topk_prob": False,
    },
    "qwen3_moe:normalized": {**COMMON, **EXPERTS, "head_dim": 16, "norm_topk_prob": True},
    # a gated shared expert
    "qwen2_moe": {**COMMON, **EXPERTS, "shared_expert_intermediate_size": 48},
}
