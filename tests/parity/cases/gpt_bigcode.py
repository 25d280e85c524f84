"""Parity cases of converter/models/gpt_bigcode.py: tiny random configs, one per twist."""

_BIGCODE = {
    "vocab_size": 128,
    "n_embd": 64,
    "n_inner": 96,
    "n_layer": 2,
    "n_head": 4,
    "n_positions": 64,
    "initializer_range": 0.1,
    "bos_token_id": 1,
    "eos_token_id": 2,
}

CASES = {
    "gpt_bigcode": _BIGCODE,  # multi-query: one key/value head
    # one key/value head per query head, c_attn laid out per head
    "gpt_bigcode:multi_head": {**_BIGCODE, "multi_query": False, "scale_attn_weights": False},
}
