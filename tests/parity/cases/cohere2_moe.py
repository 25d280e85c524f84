"""Parity cases of converter/models/cohere2_moe.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

EXPERTS = {"num_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 32, "head_dim": 16}

CASES = {
    # a dense prefix layer (width 48, full attention, forced rotary), then sliding, sliding,
    # full (no positions) sparse layers by the pattern; softmax over the top-2 logits; one
    # shared expert averaged in; window 4, outgrown by the prompt
    "cohere2_moe": {
        **COMMON,
        **EXPERTS,
        "num_hidden_layers": 4,
        "first_k_dense_replace": 1,
        "prefix_dense_intermediate_size": 48,
        "sliding_window": 4,
        "sliding_window_pattern": 3,
        "num_shared_experts": 1,
        "logit_scale": 0.5,
    },
    # sigmoid over the top-2 logits, renormalized; two shared experts summed in; RMSNorms; a
    # prefix pattern of 2 (a sliding then a full dense layer, the full one without positions)
    "cohere2_moe:sigmoid": {
        **COMMON,
        **EXPERTS,
        "num_hidden_layers": 3,
        "first_k_dense_replace": 2,
        "prefix_dense_sliding_window_pattern": 2,
        "sliding_window": 4,
        "sliding_window_pattern": 2,
        "expert_selection_fn": "sigmoid",
        "num_shared_experts": 2,
        "shared_expert_combination_strategy": "sum",
        "rms_norm_eps": 1e-6,
    },
    # sigmoid weights as they are (norm_topk_prob off), no shared expert, experts everywhere
    "cohere2_moe:raw-sigmoid": {
        **COMMON,
        **EXPERTS,
        "sliding_window": 4,
        "expert_selection_fn": "sigmoid",
        "norm_topk_prob": False,
    },
}
