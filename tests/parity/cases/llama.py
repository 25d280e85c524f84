"""Parity cases of converter/models/llama.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "llama": {
        **COMMON,
        "head_dim": 24,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 16,
        },
    },
    "mistral": {**COMMON, "head_dim": 24, "sliding_window": 4},
    "granite": {
        **COMMON,
        "embedding_multiplier": 3.0,
        "residual_multiplier": 0.5,
        "attention_multiplier": 0.1,
        "logits_scaling": 4.0,
    },
    # a window of 4 at head size 16 (GroupQueryAttention with rotary inside on cpu), outgrown
    # by the prompt (7) and the decode steps
    "mistral:window16": {**COMMON, "sliding_window": 4},
    # rope scalings the families above do not cover
    "llama:linear": {**COMMON, "rope_scaling": {"rope_type": "linear", "factor": 3.0}},
    "llama:dynamic": {
        **COMMON,
        "max_position_embeddings": 6,
        "rope_scaling": {"rope_type": "dynamic", "factor": 2.0},
    },
    "llama:yarn": {
        **COMMON,
        "max_position_embeddings": 32,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 8,
        },
    },
}

# Llama under other names, and Llama with a twist of biases or windows
CASES |= {
    "internlm3": {**COMMON, "head_dim": 16, "qkv_bias": True, "bias": True},
    "iquestcoder": {**COMMON, "head_dim": 16},
    "seed_oss": {**COMMON, "head_dim": 16, "attention_bias": True, "attention_out_bias": True},
    # sliding then full attention, by `layer_types`
    "ministral": {
        **COMMON,
        "head_dim": 16,
        "sliding_window": 4,
        "layer_types": ["sliding_attention", "full_attention"],
    },
    # full, sliding, sliding by cwm's default pattern; its default llama3 rope
    "cwm": {**COMMON, "num_hidden_layers": 3, "head_dim": 16, "sliding_window": 4},
}
