"""Parity cases of converter/models/ctrl.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON, GPT2_KEYS

_CTRL = {**GPT2_KEYS, "dff": COMMON["intermediate_size"]}

CASES = {
    "ctrl": _CTRL,  # head tied to `w`, with lm_head.bias
    "ctrl:untied": {**_CTRL, "tie_word_embeddings": False},
}
