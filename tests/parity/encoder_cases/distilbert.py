from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT_HEADS

TINY = {
    "model_type": "distilbert",
    "vocab_size": 128,
    "dim": 64,
    "hidden_dim": 96,
    "n_layers": 2,
    "n_heads": 4,
    "max_position_embeddings": 64,
    "initializer_range": 0.1,
    "pad_token_id": 1,
}
HEADS = tuple(f"DistilBert{h}" for h in TEXT_HEADS)

CASES = {
    "distilbert": EncoderCase(TINY, HEADS),
    # an untied vocab_projector, and sinusoidal positions (an initialization only)
    "distilbert:untied": EncoderCase(
        {**TINY, "tie_word_embeddings": False, "sinusoidal_pos_embds": True, "activation": "relu"},
        ("DistilBertForMaskedLM",),
    ),
}
