"""What most tiny parity configs share: small enough to convert and compare in a second."""

COMMON = {
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
    "initializer_range": 0.1,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}

# families whose attention has a key/value head per query head (no num_key_value_heads)
MULTI_HEAD = {k: v for k, v in COMMON.items() if k != "num_key_value_heads"}

# the same sizes under GPT-2's config keys (GPT-2, OpenAI GPT, CTRL, GPT-BigCode, GPT-J)
GPT2_KEYS = {
    "vocab_size": COMMON["vocab_size"],
    "n_embd": COMMON["hidden_size"],
    "n_head": COMMON["num_attention_heads"],
    "n_layer": COMMON["num_hidden_layers"],
    "n_positions": COMMON["max_position_embeddings"],
    "initializer_range": COMMON["initializer_range"],
    "bos_token_id": COMMON["bos_token_id"],
    "eos_token_id": COMMON["eos_token_id"],
}
