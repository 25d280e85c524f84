from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# google/mobilebert-uncased's layout at tiny sizes: trigram words (32 wide) mapped to 64,
# layers running at 32 with shared query/key bottlenecks, two MLPs per layer, NoNorm
TINY = {
    **TEXT,
    "model_type": "mobilebert",
    "embedding_size": 32,
    "intra_bottleneck_size": 32,
    "intermediate_size": 48,
    "num_feedforward_networks": 2,
}

CASES = {
    "mobilebert": EncoderCase(TINY, tuple(f"MobileBert{h}" for h in TEXT_HEADS)),
    # LayerNorms (two of them at torch's eps), q, k and v all from the bottleneck, the first
    # token as pooled output, an untied decoder
    "mobilebert:layer_norm": EncoderCase(
        {
            **TINY,
            "normalization_type": "layer_norm",
            "use_bottleneck_attention": True,
            "key_query_shared_bottleneck": False,
            "classifier_activation": False,
            "tie_word_embeddings": False,
            "layer_norm_eps": 1e-3,
        },
        ("MobileBertForMaskedLM", "MobileBertForSequenceClassification"),
    ),
    # no bottleneck, no trigram, words as wide as the hidden size
    "mobilebert:plain": EncoderCase(
        {
            **TINY,
            "use_bottleneck": False,
            "trigram_input": False,
            "embedding_size": 64,
            "num_feedforward_networks": 1,
        },
        ("MobileBertModel",),
    ),
}
