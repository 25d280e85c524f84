from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.ultrabert import TINY as ULTRABERT

# a 4 x 4 patch grid shuffled in 2 x 2 blocks: 4 image tokens an image
VISION = {
    "model_type": "siglip_vision_model",
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "image_size": 32,
    "patch_size": 8,
}
TINY = {
    "model_type": "ultravbert",
    "text_config": ULTRABERT,
    "vision_config": VISION,
    "image_token_id": 5,
    "pixel_shuffle_factor": 2,
}
HEADS = ("ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "Model")

CASES = {
    "ultravbert": EncoderCase(TINY, tuple(f"UltraVBert{h}" for h in HEADS), inputs="text+tiles"),
    # a tied decoder, mean pooling
    "ultravbert:tied": EncoderCase(
        {**TINY, "tie_word_embeddings": True, "classifier_pooling": "mean"},
        ("UltraVBertForMaskedLM", "UltraVBertForSequenceClassification"),
        inputs="text+tiles",
    ),
}
