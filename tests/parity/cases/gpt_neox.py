"""Parity cases of converter/models/gpt_neox.py: tiny random configs, one per twist."""

_NEOX = {
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
    "initializer_range": 0.1,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}

CASES = {
    # parallel attention+MLP with two norms; rotary_pct 0.25 (8 of 32 dims: rotated outside
    # the cpu GroupQueryAttention, whose do_rotary needs rotary dims in multiples of 16); wide
    # enough that the default 64 heads keep an even rotary dim when a test strips the key
    "gpt_neox": {**_NEOX, "hidden_size": 512, "num_attention_heads": 16},
    # sequential; 2 heads of 32 with 16 rotated dims, inside GroupQueryAttention on cpu
    "gpt_neox:sequential-rotary16": {
        **_NEOX,
        "num_attention_heads": 2,
        "rotary_pct": 0.5,
        "use_parallel_residual": False,
    },
    # 3 layers: only the last has the attention output bias
    "gpt_neox_japanese": {
        **{k: v for k, v in _NEOX.items() if k != "intermediate_size"},
        "num_hidden_layers": 3,
        "intermediate_multiple_size": 2,
    },
}
