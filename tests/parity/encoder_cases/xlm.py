"""XLM and FlauBERT (converter/models/xlm.py, flaubert.py)."""

from tests.parity.encoder_cases import EncoderCase

TINY = {
    "vocab_size": 128,
    "emb_dim": 64,
    "n_layers": 2,
    "n_heads": 4,
    "max_position_embeddings": 64,
    "pad_token_id": 1,
    "init_std": 0.1,
    "embed_init_std": 0.1,
}
HEADS = (
    "WithLMHeadModel",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnsweringSimple",
    "Model",
)

CASES = {
    "xlm": EncoderCase({**TINY, "model_type": "xlm"}, tuple(f"XLM{h}" for h in HEADS)),
    # ReLU MLPs, the mean summary through tanh, an untied projection
    "xlm:mean": EncoderCase(
        {
            **TINY,
            "model_type": "xlm",
            "gelu_activation": False,
            "summary_type": "mean",
            "summary_activation": "tanh",
            "tie_word_embeddings": False,
        },
        ("XLMWithLMHeadModel", "XLMForSequenceClassification"),
    ),
    "flaubert": EncoderCase(
        {**TINY, "model_type": "flaubert"}, tuple(f"Flaubert{h}" for h in HEADS)
    ),
    # the last token summarized
    "flaubert:last": EncoderCase(
        {**TINY, "model_type": "flaubert", "summary_type": "last"},
        ("FlaubertForSequenceClassification",),
    ),
}
