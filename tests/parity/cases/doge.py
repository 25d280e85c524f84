"""Parity cases of converter/models/doge.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

DOGE = {**COMMON, "head_dim": 16}

CASES = {
    # 3 of 16 one-neuron experts by product keys; dynamic mask within the default keep window
    "doge": {**DOGE, "is_moe": True, "num_experts": 16, "num_experts_per_tok": 3},
    # each query keeps its 4 best-biased keys once there are more; renormalized picks, biases
    "doge:keep4": {
        **DOGE,
        "is_moe": True,
        "num_experts": 9,
        "num_experts_per_tok": 2,
        "norm_topk_prob": True,
        "keep_window_size": 4,
        "attention_bias": True,
        "mlp_bias": True,
    },
    # the dense MLP only, sliding window 4
    "doge:dense": {**DOGE, "sliding_window": 4},
}
