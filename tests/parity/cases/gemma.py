"""Parity cases of converter/models/gemma.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "gemma": {**COMMON, "head_dim": 24},
    "gemma2": {
        **COMMON,
        "head_dim": 24,
        "sliding_window": 4,
        "attn_logit_softcapping": 5.0,
        "final_logit_softcapping": 3.0,
        "query_pre_attn_scalar": 20,
    },
    "gemma3_text": {
        **COMMON,
        "num_hidden_layers": 3,
        "head_dim": 24,
        "sliding_window": 4,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
        "rope_theta": 1_000_000.0,
        "rope_local_base_freq": 10_000.0,
        "rope_scaling": {"rope_type": "linear", "factor": 2.0},
        "query_pre_attn_scalar": 24,
    },
    "gemma2:window16": {
        **COMMON,
        "head_dim": 16,
        "sliding_window": 4,
        "attn_logit_softcapping": 5.0,
        "final_logit_softcapping": 3.0,
        "query_pre_attn_scalar": 20,
    },
    "gemma3_text:window16": {
        **COMMON,
        "num_hidden_layers": 3,
        "head_dim": 16,
        "sliding_window": 4,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
        "query_pre_attn_scalar": 16,
    },
    "vaultgemma": {
        **COMMON,
        "head_dim": 16,
        "sliding_window": 4,
        "attn_logit_softcapping": 5.0,
        "final_logit_softcapping": 3.0,
        "query_pre_attn_scalar": 20,
    },
}
