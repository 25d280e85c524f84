from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

# blocks of 4 over the 9 source tokens (padded to 12; 16 when staggered), 3 global tokens;
# google/pegasus-x-*'s token ids (pad is the decoder start, eos 1)
CASES = {
    "pegasus_x": Seq2SeqCase(
        {
            "model_type": "pegasus_x",
            **BART_SIZES,
            "block_size": 4,
            "num_global_tokens": 3,
            "pad_token_id": 0,
            "eos_token_id": 1,
            "decoder_start_token_id": 0,
        }
    ),
}
