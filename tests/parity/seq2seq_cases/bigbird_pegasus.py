from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

# the 9 source tokens in blocks of 1 with one random block: above transformers' threshold of
# (5 + 2) blocks, so block-sparse; in blocks of 2, at or below it (14): full attention
PEGASUS_IDS = {"pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2, "decoder_start_token_id": 2}
CASES = {
    "bigbird_pegasus": Seq2SeqCase(
        {
            "model_type": "bigbird_pegasus",
            **BART_SIZES,
            **PEGASUS_IDS,
            "block_size": 1,
            "num_random_blocks": 1,
            "use_bias": True,
        }
    ),
    "bigbird_pegasus:short": Seq2SeqCase(
        {
            "model_type": "bigbird_pegasus",
            **BART_SIZES,
            **PEGASUS_IDS,
            "block_size": 2,
            "num_random_blocks": 1,
        }
    ),
}
