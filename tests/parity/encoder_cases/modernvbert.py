from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.modernbert import TINY as MODERNBERT
from tests.parity.encoder_cases.ultravbert import HEADS
from tests.parity.encoder_cases.ultravbert import TINY as ULTRAVBERT

# UltraVBERT's SigLIP tower and connector sizes (4 image tokens an image) into ModernBERT's global
# and local layers, the window shorter than the rows
TINY = {**ULTRAVBERT, "model_type": "modernvbert", "text_config": MODERNBERT}

CASES = {
    "modernvbert": EncoderCase(TINY, tuple(f"ModernVBert{h}" for h in HEADS), inputs="text+tiles"),
    # a tied decoder with its own bias, mean pooling, biased prediction heads
    "modernvbert:tied": EncoderCase(
        {
            **TINY,
            "text_config": {**MODERNBERT, "classifier_bias": True, "norm_bias": True},
            "tie_word_embeddings": True,
            "classifier_pooling": "mean",
        },
        ("ModernVBertForMaskedLM", "ModernVBertForSequenceClassification"),
        inputs="text+tiles",
    ),
}
