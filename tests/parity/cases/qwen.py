"""Parity cases of converter/models/qwen.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    "qwen2": {**COMMON, "tie_word_embeddings": True},
    "qwen3": {**COMMON, "head_dim": 24},
    # sliding windows at head size 16, which onnxruntime's cpu GroupQueryAttention runs with
    # rotary inside: the prompt (7) and the decode steps outgrow the window (4)
    "qwen2:window16": {
        **COMMON,
        "use_sliding_window": True,
        "sliding_window": 4,
        "max_window_layers": 0,  # every layer slides
    },
    "qwen3:window16": {
        **COMMON,
        "use_sliding_window": True,
        "sliding_window": 4,
        "max_window_layers": 1,  # layer 0 full, layer 1 sliding
    },
}
