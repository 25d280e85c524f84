from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT_HEADS

# three layers: global, local, local; a window (local_attention 4: two tokens either side)
# shorter than the batch's rows
TINY = {
    "model_type": "modernbert",
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
    "local_attention": 4,
    "global_attn_every_n_layers": 3,
    "initializer_range": 0.1,
    "pad_token_id": 1,
    "bos_token_id": 2,
    "eos_token_id": 3,
    "cls_token_id": 2,
    "sep_token_id": 3,
}

CASES = {
    "modernbert": EncoderCase(TINY, tuple(f"ModernBert{h}" for h in TEXT_HEADS)),
    # biases everywhere, mean pooling, an untied decoder, other rope bases, every other layer
    # global
    "modernbert:biased": EncoderCase(
        {
            **TINY,
            "norm_bias": True,
            "attention_bias": True,
            "mlp_bias": True,
            "classifier_bias": True,
            "classifier_pooling": "mean",
            "classifier_activation": "silu",
            "hidden_activation": "gelu_pytorch_tanh",
            "tie_word_embeddings": False,
            "global_rope_theta": 1000.0,
            "local_rope_theta": 50.0,
            "global_attn_every_n_layers": 2,
        },
        ("ModernBertForMaskedLM", "ModernBertForSequenceClassification"),
    ),
}
