"""Parity cases of converter/models/beam.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

EXPERTS = {
    "num_experts": 16,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "n_group": 4,
    "topk_group": 2,
}

CASES = {
    # sliding (window 4, rotary) then full (NoPE, position-scaled queries) layers, a dense
    # first layer by mlp_layer_types, grouped sigmoid routing scaled by 2.5, softcapped logits
    "beam": {
        **COMMON,
        **EXPERTS,
        "num_hidden_layers": 3,
        "head_dim": 16,
        "sliding_window": 4,
        "layer_types": ["sliding_attention", "full_attention", "full_attention"],
        "mlp_layer_types": ["dense", "sparse", "sparse"],
        "final_logit_softcapping": 30.0,
    },
    # the defaults: layer types (sliding, the last full) and dense MLPs in the first three
    # layers; q/k/v/o biases, unnormalized weights, no groups or scaling
    "beam:defaults": {
        **COMMON,
        **EXPERTS,
        "num_hidden_layers": 4,
        "head_dim": 32,
        "sliding_window": 4,
        "attention_bias": True,
        "norm_topk_prob": False,
        "n_group": 1,
        "topk_group": 1,
        "routed_scaling_factor": 1.0,
    },
}
