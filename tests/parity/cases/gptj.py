"""Parity cases of converter/models/gptj.py: tiny random configs, one per twist."""

from tests.parity.common import GPT2_KEYS

_WIDE = {"n_embd": 256, "n_inner": 128, "rotary_dim": 16}
CASES = {
    # a test strips each key in turn: the default rotary_dim (64) must fit a head (256 / 4 here),
    # and rotary_dim a head of the default 16 heads (256 / 16)
    "gptj": {**GPT2_KEYS, **_WIDE},
    # 4 heads of 16, all rotated; the head tied to wte keeps its own bias
    "gptj:full-rotary-tied": {**GPT2_KEYS, "rotary_dim": 16, "tie_word_embeddings": True},
    "codegen": {**GPT2_KEYS, **_WIDE},
}
