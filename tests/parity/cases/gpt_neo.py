"""Parity cases of converter/models/gpt_neo.py: tiny random configs, one per twist."""

CASES = {
    # global then local attention, a window of 4 outgrown by the prompt and the decode steps
    "gpt_neo": {
        "vocab_size": 128,
        "hidden_size": 64,
        "num_layers": 2,
        "num_heads": 4,
        "attention_types": [[["global", "local"], 1]],
        "window_size": 4,
        "max_position_embeddings": 64,
        "initializer_range": 0.1,
        "bos_token_id": 1,
        "eos_token_id": 2,
    },
}
