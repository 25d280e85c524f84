"""Parity cases of converter/models/openai_gpt.py: tiny random configs, one per twist."""

CASES = {
    "openai-gpt": {
        "vocab_size": 128,
        "n_embd": 64,
        "n_head": 4,
        "n_layer": 2,
        "n_positions": 64,
        "initializer_range": 0.1,
        "bos_token_id": 1,
        "eos_token_id": 2,
    },
}
