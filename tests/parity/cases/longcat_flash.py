"""Parity cases of converter/models/longcat_flash.py: two latent-attention sublayers (two
caches) and two dense MLPs per layer beside a shortcut MoE with zero-computation experts."""

from tests.parity.common import COMMON

# two layers (num_layers; four attention sublayers, four caches); 8 real experts of width 32
# and 4 identity experts, each token picking 3 of the 12, so some tokens pick identities
BASE = {
    **{k: v for k, v in COMMON.items() if k not in ("num_hidden_layers", "intermediate_size")},
    "num_key_value_heads": COMMON["num_attention_heads"],
    "num_layers": 2,
    "ffn_hidden_size": COMMON["intermediate_size"],
    "q_lora_rank": 24,
    "kv_lora_rank": 32,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 8,
    "head_dim": 8,
    "v_head_dim": 12,
    "n_routed_experts": 8,
    "zero_expert_num": 4,
    "moe_topk": 3,
    "expert_ffn_hidden_size": 32,
    "routed_scaling_factor": 2.5,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
}

CASES = {
    "longcat_flash": BASE,
    # no zero experts: the routed experts run in com.microsoft.MoE on cpu; biased attention,
    # tied head
    "longcat_flash:no_zero": {
        **BASE,
        "zero_expert_num": 0,
        "attention_bias": True,
        "tie_word_embeddings": True,
    },
}
