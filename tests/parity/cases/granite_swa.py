"""Parity cases of converter/models/granite_swa.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # layer 0 full, layers 1-3 slide over 4 tokens; layer 2 has no rotary embedding, layer 3
    # its own base; every head has a sink
    "granite_swa": {
        **COMMON,
        "num_hidden_layers": 4,
        "sliding_window": 4,
        "layer_rope_theta": [10_000.0, 10_000.0, 0, 500.0],
        "embedding_multiplier": 3.0,
        "residual_multiplier": 0.5,
        "attention_multiplier": 0.1,
        "logits_scaling": 4.0,
    },
}
