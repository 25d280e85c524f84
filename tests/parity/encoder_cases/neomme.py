from tests.parity.encoder_cases import EncoderCase

# five layers: sliding, full, sliding, full, full (value embeddings on the first and last full
# ones only); windows of 2 and (per_layer_config) 3 tokens either side, shorter than the rows;
# 4 query heads over 2 key/value heads of 16, full layers rotating a quarter of each
TINY = {
    "model_type": "neomme",
    "vocab_size": 128,
    "embedding_rank": 16,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 5,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 64,
    "layer_types": [
        "sliding_attention",
        "full_attention",
        "sliding_attention",
        "full_attention",
        "full_attention",
    ],
    "sliding_window": 2,
    "per_layer_config": {
        "1": {"sliding_window": None},
        "2": {"sliding_window": 3},
        "3": {"sliding_window": None},
        "4": {"sliding_window": None},
    },
}

CASES = {
    "neomme": EncoderCase(
        {**TINY, "embedding_dim": 8}, ("NeoMMEModel", "NeoMMEForMaskedLM", "NeoMMEForRetrieval")
    ),
    # an untied head, biases, other rope bases and rotated fractions
    "neomme:untied": EncoderCase(
        {
            **TINY,
            "tie_word_embeddings": False,
            "attention_bias": True,
            "mlp_bias": True,
            "rope_parameters": {
                "full_attention": {"rope_theta": 500.0, "partial_rotary_factor": 0.5},
                "sliding_attention": {"rope_theta": 50.0},
            },
        },
        ("NeoMMEForMaskedLM",),
    ),
}
