"""Parity cases of converter/models/gpt2.py: tiny random configs, one per twist."""

_GPT2 = {
    "vocab_size": 128,
    "n_embd": 64,
    "n_head": 4,
    "n_layer": 2,
    "n_positions": 64,
    "initializer_range": 0.1,
    "bos_token_id": 1,
    "eos_token_id": 2,
}

CASES = {"gpt2": _GPT2, "gpt-sw3": _GPT2}
