from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

SIDES = {"shape_vocab_size": 40, "pronunciation_vocab_size": 30}
HEADS = tuple(f"RoCBert{h}" for h in TEXT_HEADS)

CASES = {
    # word, shape and pronunciation vectors concatenated (64 + 16 + 24) and mapped to 64
    "roc_bert": EncoderCase(
        {
            "model_type": "roc_bert",
            **TEXT,
            **SIDES,
            "shape_embed_dim": 16,
            "pronunciation_embed_dim": 24,
            "concat_input": True,
        },
        HEADS,
        inputs="shape+pronunciation",
    ),
    # the normed embeddings averaged with both side vectors (of the hidden width)
    "roc_bert:average": EncoderCase(
        {
            "model_type": "roc_bert",
            **TEXT,
            **SIDES,
            "shape_embed_dim": 64,
            "pronunciation_embed_dim": 64,
            "concat_input": False,
        },
        HEADS,
        inputs="shape+pronunciation",
    ),
    # averaged with the pronunciation vector alone: the shape table unread, no shape input
    "roc_bert:average-no-shape": EncoderCase(
        {
            "model_type": "roc_bert",
            **TEXT,
            **SIDES,
            "shape_embed_dim": 64,
            "pronunciation_embed_dim": 64,
            "concat_input": False,
            "enable_shape": False,
        },
        ("RoCBertModel",),
        inputs="shape+pronunciation",
    ),
}
