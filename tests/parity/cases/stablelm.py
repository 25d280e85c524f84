"""Parity cases of converter/models/stablelm.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # sequential, q/k/v biases; rotary on 4 of 16 dims, outside the cpu GroupQueryAttention
    "stablelm": {**COMMON, "use_qkv_bias": True},
    # attention and MLP in parallel off one norm, a LayerNorm per q and k head; 2 heads of 32
    # (1 kv head) with 16 rotated dims, inside GroupQueryAttention
    "stablelm:parallel-qk-norm": {
        **COMMON,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "partial_rotary_factor": 0.5,
        "use_parallel_residual": True,
        "qk_layernorm": True,
    },
}
