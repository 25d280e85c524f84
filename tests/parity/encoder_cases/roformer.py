from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

TINY = {**TEXT, "model_type": "roformer"}

CASES = {
    "roformer": EncoderCase(TINY, tuple(f"RoFormer{h}" for h in TEXT_HEADS)),
    # values rotated too, a narrower embedding projected up, an untied decoder
    "roformer:rotary_value": EncoderCase(
        {**TINY, "rotary_value": True, "embedding_size": 32, "tie_word_embeddings": False},
        ("RoFormerForMaskedLM", "RoFormerForSequenceClassification"),
    ),
}
