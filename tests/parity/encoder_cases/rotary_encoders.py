"""The rotary post-norm encoders of converter/models/jina_embeddings_v3.py, nomic_bert.py and
gte.py."""

from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

JINA = {**TEXT, "model_type": "jina_embeddings_v3", "type_vocab_size": 1}
NOMIC = {**TEXT, "model_type": "nomic_bert", "hidden_act": "silu"}
GTE = {**TEXT, "model_type": "gte", "type_vocab_size": 1}
BERT_HEADS = ("ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "Model")

CASES = {
    "jina_embeddings_v3": EncoderCase(JINA, tuple(f"JinaEmbeddingsV3{h}" for h in TEXT_HEADS)),
    "nomic_bert": EncoderCase(NOMIC, tuple(f"NomicBert{h}" for h in BERT_HEADS)),
    "gte": EncoderCase(GTE, tuple(f"Gte{h}" for h in BERT_HEADS)),
    # another rope base, an untied decoder
    "nomic_bert:untied": EncoderCase(
        {
            **NOMIC,
            "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
            "tie_word_embeddings": False,
        },
        ("NomicBertForMaskedLM",),
    ),
    # no token types at all, an untied decoder, another rope base
    "gte:untied": EncoderCase(
        {
            **GTE,
            "type_vocab_size": 0,
            "tie_word_embeddings": False,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0},
        },
        ("GteForMaskedLM", "GteModel"),
    ),
}
