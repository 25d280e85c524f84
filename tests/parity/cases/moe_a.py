"""Parity cases of Granite MoE (stacked experts, shared MLP, sliding windows), FlexOlmo and
PhiMoE (sparsemixer routing)."""

from tests.parity.common import COMMON

GRANITE = {
    **COMMON,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "intermediate_size": 32,
    "embedding_multiplier": 2.0,
    "residual_multiplier": 0.5,
    "attention_multiplier": 0.3,
    "logits_scaling": 2.0,
}

CASES = {
    "granitemoe": GRANITE,
    "granitemoeshared": {**GRANITE, "shared_intermediate_size": 48},
    # sliding windows on three layers of four, a NoPE layer, sinks, a shared MLP
    "granitemoe_swa": {
        **GRANITE,
        "num_hidden_layers": 4,
        "sliding_window": 4,
        "layer_rope_theta": [10000.0, 0, 10000.0, 500.0],
        "shared_intermediate_size": 48,
    },
    # sparsemixer top-2 of 8; a wide jitter so several logits compete for each pick
    "phimoe": {
        **COMMON,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "intermediate_size": 32,
        "router_jitter_noise": 0.5,
        "attention_bias": True,
        "lm_head_bias": True,
    },
    # longrope by its short factors, cos and sin scaled by the mscale
    "phimoe:longrope": {
        **COMMON,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "intermediate_size": 32,
        "rope_parameters": {
            "rope_type": "longrope",
            "rope_theta": 10000.0,
            "short_factor": [1.0, 1.1, 1.2, 1.3, 1.5, 2.0, 3.0, 4.0],
            "long_factor": [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 9.0],
            "short_mscale": 1.2,
            "long_mscale": 1.2,
            "original_max_position_embeddings": 8,
        },
    },
    # 7 experts, each token picking 5, raw and renormalized
    "flex_olmo": {**COMMON, "num_experts": 7, "num_experts_per_tok": 5, "intermediate_size": 32},
    "flex_olmo:normalized": {
        **COMMON,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "intermediate_size": 32,
        "norm_topk_prob": True,
    },
    # experts in attention too: 3 picks of 5, 2 kv heads of 16 each (6 query heads)
    "jetmoe": {
        **COMMON,
        "num_local_experts": 5,
        "num_experts_per_tok": 3,
        "intermediate_size": 32,
        "kv_channels": 16,
    },
}
