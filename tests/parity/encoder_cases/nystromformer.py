from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# Nyström attention: the test's sequence in 3 segments of 3 tokens (segment_means_seq_len is the
# length transformers cuts into num_landmarks segments), a 5-token convolution over the values
# that reaches across the second row's padding
LENGTH = 9  # tests/parity/encoder_reference.py's

NYSTROM = {
    **TEXT,
    "model_type": "nystromformer",
    "segment_means_seq_len": LENGTH,
    "num_landmarks": 3,
    "conv_kernel_size": 5,
}

CASES = {
    "nystromformer": EncoderCase(NYSTROM, tuple(f"Nystromformer{h}" for h in TEXT_HEADS)),
    # as many landmarks as tokens: transformers' softmax attention (padding as its 2-D mask)
    "nystromformer:softmax": EncoderCase(
        {**NYSTROM, "num_landmarks": LENGTH, "conv_kernel_size": 3},
        ("NystromformerForMaskedLM", "NystromformerModel"),
    ),
    "nystromformer:untied": EncoderCase(
        {**NYSTROM, "tie_word_embeddings": False}, ("NystromformerForMaskedLM",)
    ),
}
