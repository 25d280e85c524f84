from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

TINY = {**TEXT, "model_type": "mpnet", "relative_attention_num_buckets": 32}

CASES = {
    "mpnet": EncoderCase(TINY, tuple(f"MPNet{h}" for h in TEXT_HEADS)),
    # an untied decoder (with its own bias), more bucket rows than transformers reads
    "mpnet:untied": EncoderCase(
        {**TINY, "tie_word_embeddings": False, "relative_attention_num_buckets": 40},
        ("MPNetForMaskedLM",),
    ),
}
