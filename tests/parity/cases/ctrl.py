"""Parity cases of converter/models/ctrl.py: tiny random configs, one per twist."""

_CTRL = {
    "vocab_size": 128,
    "n_embd": 64,
    "dff": 96,
    "n_layer": 2,
    "n_head": 4,
    "n_positions": 64,
    "initializer_range": 0.1,
    "bos_token_id": 1,
    "eos_token_id": 2,
}

CASES = {
    "ctrl": _CTRL,  # head tied to `w`, with lm_head.bias
    "ctrl:untied": {**_CTRL, "tie_word_embeddings": False},
}
