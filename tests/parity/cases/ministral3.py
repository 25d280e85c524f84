"""Parity cases of converter/models/ministral3.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

# queries scaled from position 4 on (the prompt is 7 long, then 3 steps)
_ROPE = {
    "rope_type": "yarn",
    "rope_theta": 10000.0,
    "factor": 2.0,
    "original_max_position_embeddings": 4,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
    "llama_4_scaling_beta": 0.5,
}
CASES = {
    "ministral3": {**COMMON, "head_dim": 16, "rope_parameters": _ROPE},
    "ministral3:window16": {
        **COMMON,
        "head_dim": 16,
        "rope_parameters": _ROPE,
        "sliding_window": 4,
    },
}
