from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

# a window of 4 (2 on each side) over the 9 source tokens, padded to 12
SIZES = {k: v for k, v in BART_SIZES.items() if k != "max_position_embeddings"}
CASES = {
    "led": Seq2SeqCase(
        {
            "model_type": "led",
            **SIZES,
            "attention_window": 4,
            "max_encoder_position_embeddings": 64,
            "max_decoder_position_embeddings": 32,
        }
    ),
}
