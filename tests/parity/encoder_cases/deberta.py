from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# microsoft/deberta-base's layout: absolute and relative positions, c2p and p2c; the relative
# span (6) is shorter than the batch's rows, so distances clamp
TINY = {
    **TEXT,
    "model_type": "deberta",
    "type_vocab_size": 0,
    "relative_attention": True,
    "pos_att_type": "c2p|p2c",
    "max_relative_positions": 6,
}

CASES = {
    "deberta": EncoderCase(TINY, tuple(f"Deberta{h}" for h in TEXT_HEADS)),
    # token types, p2c alone, relative span from max_position_embeddings, non-legacy LM head
    "deberta:p2c": EncoderCase(
        {
            **TINY,
            "type_vocab_size": 2,
            "pos_att_type": ["p2c"],
            "max_relative_positions": -1,
            "legacy": False,
        },
        ("DebertaForMaskedLM", "DebertaForSequenceClassification"),
    ),
}
