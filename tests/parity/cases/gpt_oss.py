"""Parity cases of GPT-OSS: sinks, alternating sliding windows, biased router and experts with
the clamped SwiGLU (a limit low enough that the clamps bite)."""

from tests.parity.common import COMMON

CASES = {
    "gpt_oss": {
        **COMMON,
        "intermediate_size": 32,
        "head_dim": 16,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "sliding_window": 4,
        "swiglu_limit": 0.5,
    },
}
