"""Parity cases of converter/models/cohere.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # per-head q/k norms; 16 rotated dims (interleaved) inside the cpu GroupQueryAttention
    "cohere": {**COMMON, "use_qk_norm": True, "logit_scale": 0.5},
    # 3 sliding layers (rotary, window 4, outgrown by the prompt) then one without positions
    "cohere2": {**COMMON, "num_hidden_layers": 4, "sliding_window": 4, "logit_scale": 0.5},
    # a sliding layer with rope, a full-attention layer without
    "cohere_compass_text": {
        **COMMON,
        "layer_types": ["sliding_attention", "full_attention"],
        "sliding_window": 4,
        "rope_parameters": {
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
            "full_attention": None,
        },
    },
    # both layer types rotate, with their own settings
    "cohere_compass_text:rope-per-layer-type": {
        **COMMON,
        "layer_types": ["sliding_attention", "full_attention"],
        "sliding_window": 4,
        "logit_scale": 0.5,
        "rope_parameters": {
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
            "full_attention": {"rope_type": "linear", "rope_theta": 50_000.0, "factor": 2.0},
        },
    },
}
