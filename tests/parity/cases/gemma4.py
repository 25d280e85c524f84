"""Parity cases of converter/models/gemma4.py: tiny random configs, one per twist.

Gemma 4 attends with scale 1 over normed q and k: on random weights its logits move more with
activation rounding than other families' (torch's own bf16 drifts several times further), so
the base cases, which tests/test_ep_matrix.py also runs in f16 and int4, have three layers and
no final softcap; the variants hold the larger configurations (f32 parity only).
"""

from tests.parity.common import COMMON

_GEMMA4 = {
    **COMMON,
    "num_hidden_layers": 4,
    "head_dim": 16,
    "sliding_window": 4,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    "final_logit_softcapping": 3.0,
}
# full-attention layers: one kv head, keys as values, proportional rope; per-layer embeddings;
# layers 2 and 3 reuse layers 0 and 1's keys/values (and have double-wide MLPs)
_SHARED_PLE = {
    **_GEMMA4,
    "num_global_key_value_heads": 1,
    "attention_k_eq_v": True,
    "hidden_size_per_layer_input": 8,
    "vocab_size_per_layer_input": 128,
    "num_kv_shared_layers": 2,
    "use_double_wide_mlp": True,
}
_THREE = {  # layer 2 (full) reuses layer 1's keys/values
    "num_hidden_layers": 3,
    "layer_types": ["sliding_attention", "full_attention", "full_attention"],
    "num_kv_shared_layers": 1,
    "final_logit_softcapping": None,
}
CASES = {
    "gemma4_text": {**_SHARED_PLE, **_THREE, "global_head_dim": 16},
    # full-attention layers with their own head size (caches of two shapes); sliding and full
    # layers shared
    "gemma4_text:head_dims": {**_SHARED_PLE, "global_head_dim": 32},
    # no sharing, own values, no per-layer embeddings; the ropes transformers defaults to
    "gemma4_text:plain": {**_GEMMA4, "global_head_dim": 16, "hidden_size_per_layer_input": 0},
    # head size 32 on full-attention layers, half their pairs rotating
    "gemma4_unified_text": {
        **_GEMMA4,
        **_THREE,
        "global_head_dim": 32,
        "rope_parameters": {
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
            "full_attention": {
                "rope_type": "proportional",
                "partial_rotary_factor": 0.5,
                "rope_theta": 100_000.0,
            },
        },
    },
}
