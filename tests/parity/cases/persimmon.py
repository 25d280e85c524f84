"""Parity cases of converter/models/persimmon.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

_PERSIMMON = {k: v for k, v in COMMON.items() if k != "num_key_value_heads"}  # no GQA

CASES = {
    # q/k LayerNorms; rotary on 8 of 16 dims, outside the cpu GroupQueryAttention
    "persimmon": {**_PERSIMMON},
    # 2 heads of 32, 16 rotated dims inside GroupQueryAttention, no q/k norms
    "persimmon:rotary16": {**_PERSIMMON, "num_attention_heads": 2, "qk_layernorm": False},
}
