"""Parity cases of converter/models/hunyuan.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "hunyuan_v1_dense": {**COMMON, "head_dim": 16, "attention_bias": True},
    # "dynamic" with an alpha: a fixed NTK stretch of the base
    "hunyuan_v1_dense:ntk_alpha": {
        **COMMON,
        "head_dim": 16,
        "rope_parameters": {
            "rope_type": "dynamic",
            "factor": 1.0,
            "alpha": 1000.0,
            "rope_theta": 10000.0,
        },
    },
}
