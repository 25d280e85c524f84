from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

# a source vocabulary of 96 tokens, a target one of 128; left padding, which its positions skip
SIZES = {k: v for k, v in BART_SIZES.items() if k != "vocab_size"}
CASES = {
    "fsmt": Seq2SeqCase(
        {
            "model_type": "fsmt",
            **SIZES,
            "src_vocab_size": 96,
            "tgt_vocab_size": 128,
            "langs": ["en", "de"],
        },
        inputs="text-left-padded",
    ),
}
