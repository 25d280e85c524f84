"""Parity cases of converter/models/starcoder2.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "starcoder2": {**COMMON, "hidden_act": "gelu_pytorch_tanh"},
    # the window (4) at head size 16 is outgrown by the prompt and decode steps
    "starcoder2:window16": {**COMMON, "sliding_window": 4, "use_bias": False},
}
