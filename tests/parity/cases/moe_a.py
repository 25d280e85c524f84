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
}
