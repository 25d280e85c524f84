from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

CASES = {
    # 2 attention + 2 convolution heads, a span (5) shorter than the sequence (9), narrower
    # embeddings projected up
    "convbert": EncoderCase(
        {"model_type": "convbert", **TEXT, "embedding_size": 32, "conv_kernel_size": 5},
        tuple(f"ConvBert{h}" for h in TEXT_HEADS),
    ),
    # grouped feed-forward linears, head_ratio leaving one head of each kind, the default
    # span (9), an untied generator head
    "convbert:grouped": EncoderCase(
        {
            "model_type": "convbert",
            **TEXT,
            "embedding_size": 64,
            "num_groups": 2,
            "head_ratio": 4,
            "tie_word_embeddings": False,
        },
        ("ConvBertForMaskedLM", "ConvBertModel"),
    ),
}
