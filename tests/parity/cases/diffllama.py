"""Parity cases of converter/models/diffllama.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # four layers: lambda_init differs per layer; kv groups of two query heads
    "diffllama": {**COMMON, "num_hidden_layers": 4},
    # multi-head: each query head has its own kv head
    "diffllama:mha": {**COMMON, "num_key_value_heads": 4, "tie_word_embeddings": True},
}
