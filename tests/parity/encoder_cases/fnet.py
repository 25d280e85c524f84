from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# FNet has no attention heads; the mixing runs over the test's 9 tokens, padding included
TINY = {
    **{k: v for k, v in TEXT.items() if k != "num_attention_heads"},
    "model_type": "fnet",
    "hidden_act": "gelu_new",
}

CASES = {
    "fnet": EncoderCase(TINY, tuple(f"FNet{h}" for h in TEXT_HEADS)),
    # an untied decoder with its own bias; transformers' DFT matrices for 9 tokens
    "fnet:untied_tpu": EncoderCase(
        {
            **TINY,
            "tie_word_embeddings": False,
            "use_tpu_fourier_optimizations": True,
            "tpu_short_seq_length": 9,
        },
        ("FNetForMaskedLM", "FNetModel"),
    ),
}
