from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT

# grouped key/value heads (4 query heads over 2)
TINY = {**TEXT, "model_type": "eurobert", "num_key_value_heads": 2, "hidden_act": "silu"}
HEADS = ("ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "Model")

CASES = {
    "eurobert": EncoderCase(TINY, tuple(f"EuroBert{h}" for h in HEADS)),
    # biases, a tied head, mean pooling, another rope base
    "eurobert:mean": EncoderCase(
        {
            **TINY,
            "attention_bias": True,
            "mlp_bias": True,
            "tie_word_embeddings": True,
            "classifier_pooling": "mean",
            "num_key_value_heads": 4,
            "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
        },
        ("EuroBertForMaskedLM", "EuroBertForSequenceClassification"),
    ),
    "eurobert:bos": EncoderCase(
        {**TINY, "classifier_pooling": "bos"}, ("EuroBertForSequenceClassification",)
    ),
}
