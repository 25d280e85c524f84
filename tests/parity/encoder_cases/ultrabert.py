from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# three layers: local, local, global (the default pattern); a window of two tokens either side
TINY = {
    **TEXT,
    "model_type": "ultrabert",
    "num_hidden_layers": 3,
    "sliding_window": 2,
    "prediction_head_size": 48,
    "hidden_act": "silu",
    "bos_token_id": 0,
    "eos_token_id": 0,
}

CASES = {
    "ultrabert": EncoderCase(TINY, tuple(f"Ultrabert{h}" for h in TEXT_HEADS)),
    # a tied decoder, mean pooling, grouped key/value heads, bases of our own per layer type
    "ultrabert:tied": EncoderCase(
        {
            **TINY,
            "tie_word_embeddings": True,
            "classifier_pooling": "mean",
            "num_key_value_heads": 2,
            "rope_parameters": {
                "sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
                "full_attention": {"rope_type": "default", "rope_theta": 5000.0},
            },
        },
        ("UltrabertForMaskedLM", "UltrabertForSequenceClassification"),
    ),
}
