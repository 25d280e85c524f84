from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# the expected-collision attention (use_expectation, transformers' CPU path); two token types,
# as the test feeds them
TINY = {**TEXT, "model_type": "yoso", "type_vocab_size": 2}

CASES = {
    "yoso": EncoderCase(TINY, tuple(f"Yoso{h}" for h in TEXT_HEADS)),
    # the values' convolution (reaching across the second row's padding, which zeroes them),
    # a shorter hash code, an untied decoder
    "yoso:conv_untied": EncoderCase(
        {**TINY, "conv_window": 5, "hash_code_len": 4, "tie_word_embeddings": False},
        ("YosoForMaskedLM", "YosoModel"),
    ),
}
