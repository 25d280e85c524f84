"""Parity cases of converter/models/deepseek.py: multi-head latent attention with routed and
shared experts behind a dense first layer (first_k_dense_replace = 1)."""

from tests.parity.common import COMMON

MLA = {
    "q_lora_rank": 24,
    "kv_lora_rank": 32,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 8,
    "v_head_dim": 12,
}
# one latent feeds every head: as many key/value heads as query heads; three layers, the
# first dense; 8 experts of width 32 in 4 groups, each token picking 2, plus a shared expert
BASE = {
    **COMMON,
    "num_key_value_heads": COMMON["num_attention_heads"],
    "num_hidden_layers": 3,
    **MLA,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
}
# 16 experts in 4 groups of 4: a token's 2 picks come from its 2 groups whose two best sum
# highest, which for some tokens differs from the plain top-2 (16, so that transformers' default
# n_group (8) or num_experts_per_tok (8) still leaves enough experts, see test_config_defaults)
GROUPED = {"n_routed_experts": 16, "n_group": 4, "topk_group": 2}

CASES = {
    # group-limited softmax routing (the group of the best expert: 2 groups of 4, one kept,
    # so the second pick differs from the plain top-2 for some tokens), routed scaling, two
    # shared experts' width
    "deepseek_v2": {
        **BASE,
        "n_group": 2,
        "topk_group": 1,
        "topk_method": "group_limited_greedy",
        "routed_scaling_factor": 2.0,
        "n_shared_experts": 2,
    },
    # greedy top-k over all experts: com.microsoft.MoE routes by itself on cpu; q_proj
    "deepseek_v2:greedy": {**BASE, "topk_method": "greedy", "q_lora_rank": None},
    # sigmoid + correction bias, grouped top-k, renormalized, routed scaling
    "deepseek_v3": {**BASE, **GROUPED, "routed_scaling_factor": 2.5, "norm_topk_prob": True},
    # raw sigmoid weights, rotate_half pairs, q_proj, biased attention, untied head
    "deepseek_v3:plain": {
        **BASE,
        **GROUPED,
        "norm_topk_prob": False,
        "rope_interleave": False,
        "q_lora_rank": None,
        "attention_bias": True,
        "tie_word_embeddings": False,
    },
    # YaRN with mscale_all_dim: the attention scale grows with the factor squared
    "deepseek_v3:yarn": {
        **BASE,
        **GROUPED,
        "max_position_embeddings": 64,
        "rope_parameters": {
            "rope_type": "yarn",
            "rope_theta": 10000.0,
            "factor": 4.0,
            "original_max_position_embeddings": 16,
            "beta_fast": 32,
            "beta_slow": 1,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
    },
    "sarvam_mla": {**BASE, "n_group": 1, "topk_group": 1, "routed_scaling_factor": 2.5},
    # experts where mlp_layer_types says sparse: dense, sparse, dense
    "glm4_moe_lite": {
        **BASE,
        **GROUPED,
        "first_k_dense_replace": None,
        "mlp_layer_types": ["dense", "sparse", "dense"],
        "routed_scaling_factor": 1.8,
    },
    # DeepSeek-V3 with a norm on each expert layer's MLP output
    "axk1": {**BASE, **GROUPED, "routed_scaling_factor": 2.5},
    # no pad token: transformers zeroes its embedding row when it loads a Youtu checkpoint, not
    # in the model it saved (tests/test_youtu_pad_row.py holds the loaded one to it)
    "youtu": {
        **{k: v for k, v in BASE.items() if k in COMMON or k in MLA},
        "num_hidden_layers": 2,
        "tie_word_embeddings": True,
        "pad_token_id": None,
    },
}
