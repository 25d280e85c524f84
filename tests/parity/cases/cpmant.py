"""Parity cases of converter/models/cpmant.py: tiny random configs, one per twist."""

CASES = {
    # 8 buckets up to distance 16: distances of 2 and more fall in the log-spaced buckets
    "cpmant": {
        "vocab_size": 128,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "dim_head": 16,
        "dim_ff": 96,
        "num_hidden_layers": 2,
        "prompt_types": 4,
        "prompt_length": 3,
        "segment_types": 4,
        "position_bias_num_buckets": 8,
        "position_bias_max_distance": 16,
        "init_std": 0.1,
    },
}
