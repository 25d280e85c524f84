"""Parity cases of converter/models/laguna.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

LAGUNA = {
    **COMMON,
    "num_hidden_layers": 3,
    "head_dim": 16,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 48,
    "num_experts": 8,
    "num_experts_per_tok": 2,
}

CASES = {
    # 4, 8 and 2 query heads over 2 kv heads; a sliding middle layer (window 4) rotating all
    # of each head, full layers rotating half; per-head softplus gates; a dense first layer,
    # then sigmoid routing over logits softcapped at 0.5, with its bias, scaled by 2
    "laguna": {
        **LAGUNA,
        "num_attention_heads_per_layer": [4, 8, 2],
        "layer_types": ["full_attention", "sliding_attention", "full_attention"],
        "sliding_window": 4,
        "moe_router_logit_softcapping": 0.5,
        "moe_routed_scaling_factor": 2.0,
    },
    # one gate per output element, no softcap, experts in every layer, biased attention
    "laguna:elementwise": {
        **LAGUNA,
        "gating": "per-element",
        "mlp_layer_types": ["sparse", "sparse", "sparse"],
        "attention_bias": True,
        "num_experts_per_tok": 3,
    },
}
