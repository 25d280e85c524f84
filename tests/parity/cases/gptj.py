"""Parity cases of converter/models/gptj.py: tiny random configs, one per twist."""

_GPTJ = {
    "vocab_size": 128,
    "n_positions": 64,
    "n_layer": 2,
    "initializer_range": 0.1,
    "bos_token_id": 1,
    "eos_token_id": 2,
}

CASES = {
    # a test strips each key in turn: the default rotary_dim (64) must fit a head (64 here), and
    # rotary_dim a head of the default 16 heads (256 / 16)
    "gptj": {**_GPTJ, "n_embd": 256, "n_inner": 128, "n_head": 4, "rotary_dim": 16},
    # 4 heads of 16, all rotated; the head tied to wte keeps its own bias
    "gptj:full-rotary-tied": {
        **_GPTJ,
        "n_embd": 64,
        "n_head": 4,
        "rotary_dim": 16,
        "tie_word_embeddings": True,
    },
    "codegen": {**_GPTJ, "n_embd": 256, "n_inner": 128, "n_head": 4, "rotary_dim": 16},
}
