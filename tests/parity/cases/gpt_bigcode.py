"""Parity cases of converter/models/gpt_bigcode.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON, GPT2_KEYS

_BIGCODE = {**GPT2_KEYS, "n_inner": COMMON["intermediate_size"]}

CASES = {
    "gpt_bigcode": _BIGCODE,  # multi-query: one key/value head
    # one key/value head per query head, c_attn laid out per head
    "gpt_bigcode:multi_head": {**_BIGCODE, "multi_query": False, "scale_attn_weights": False},
}
