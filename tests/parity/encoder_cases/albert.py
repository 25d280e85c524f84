from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# a narrower embedding (32) mapped up to 64; four layers sharing two groups' weights (layers
# 0-1 run group 0, layers 2-3 group 1)
TINY = {
    **TEXT,
    "model_type": "albert",
    "embedding_size": 32,
    "num_hidden_layers": 4,
    "num_hidden_groups": 2,
    "inner_group_num": 1,
}

CASES = {
    "albert": EncoderCase(TINY, tuple(f"Albert{h}" for h in TEXT_HEADS)),
    # every layer one shared weight set (ALBERT's released layout), an untied decoder
    "albert:shared": EncoderCase(
        {**TINY, "num_hidden_groups": 1, "tie_word_embeddings": False, "hidden_act": "gelu"},
        ("AlbertForMaskedLM", "AlbertForSequenceClassification"),
    ),
}
