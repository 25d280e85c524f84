"""Parity cases of MiMo-V2-Flash: values narrower than q/k (cached padded) and scaled, sliding
layers with twice the KV heads and a sink per head, partial rope per layer type, grouped
DeepSeek-V3 routing without shared experts."""

from tests.parity.common import COMMON

GROUPED = {
    "n_routed_experts": 16,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "n_group": 4,
    "topk_group": 2,
}

CASES = {
    # transformers' defaults for the rest: a dense first layer, layer 0 full and the others
    # sliding (window 4, 2 KV heads against 1), rope over int(32 * 0.334) = 10 of each head,
    # values 16 wide scaled by 0.707
    "mimo_v2_flash": {
        **COMMON,
        **GROUPED,
        "num_hidden_layers": 3,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "v_head_dim": 16,
        "sliding_window": 4,
        "routed_scaling_factor": 2.5,
    },
    # the reference implementation's `sliding_window_size` (window 3 + the query), layer and
    # MLP types listed, values as wide as keys and unscaled, explicit ropes (the full one's
    # rotating the default int(32 * 0.334) = 10), q/k/v biases, raw routing weights
    "mimo_v2_flash:swa_size": {
        **COMMON,
        **GROUPED,
        "num_hidden_layers": 3,
        "head_dim": 32,
        "v_head_dim": 32,
        "sliding_window_size": 3,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
        "mlp_layer_types": ["sparse", "dense", "sparse"],
        "attention_value_scale": None,
        "attention_bias": True,
        "norm_topk_prob": False,
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": 1000.0},
            "sliding_attention": {
                "rope_type": "default",
                "rope_theta": 100.0,
                "partial_rotary_factor": 0.5,
            },
        },
    },
}
