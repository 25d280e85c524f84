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
