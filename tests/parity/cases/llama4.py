"""Parity cases of Llama 4 (text) and the newer MoE families of converter/models/llama4.py."""

from tests.parity.common import COMMON

# layers 1 and 3 with experts, layer 3 NoPE; chunks of 4 positions, temperature every 2
LLAMA4 = {
    **COMMON,
    "num_hidden_layers": 4,
    "head_dim": 16,
    "intermediate_size": 32,
    "intermediate_size_mlp": 96,
    "num_local_experts": 4,
    "num_experts_per_tok": 1,
    "interleave_moe_layer_step": 2,
    "attention_chunk_size": 4,
    "floor_scale": 2,
    "attn_scale": 0.5,
}

CASES = {
    "llama4_text": LLAMA4,
    # top-2 (dense experts), no chunking or q/k norm: GroupQueryAttention on cpu
    "llama4_text:top2": {
        **LLAMA4,
        "num_experts_per_tok": 2,
        "attention_chunk_size": 64,
        "use_qk_norm": False,
    },
}

EXPERTS = {"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32}

CASES |= {
    # a sliding layer with its own rope, a dense layer
    "mellum": {
        **COMMON,
        **EXPERTS,
        "num_hidden_layers": 3,
        "head_dim": 16,
        "sliding_window": 4,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
        "mlp_layer_types": ["sparse", "dense", "sparse"],
    },
    "hy_v3": {
        **COMMON,
        **EXPERTS,
        "head_dim": 16,
        "mlp_layer_types": ["dense", "sparse"],
        "num_shared_experts": 2,
        "router_scaling_factor": 2.5,
    },
}

CASES |= {
    # NoPE full layers around a sliding one with sinks; a dense first layer
    "flint": {
        **COMMON,
        **EXPERTS,
        "num_hidden_layers": 3,
        "head_dim": 16,
        "sliding_window": 4,
        "layer_types": ["full_attention", "sliding_attention", "full_attention"],
        "mlp_only_layers": [0],
        "shared_expert_intermediate_size": 48,
    },
    "kolibri1": {
        **COMMON,
        **EXPERTS,
        "head_dim": 16,
        "sliding_window": 4,
        "layer_types": ["sliding_attention", "full_attention"],
        "shared_expert_intermediate_size": 48,
        "norm_topk_prob": True,
    },
}
