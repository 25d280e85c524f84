from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

# google/pegasus-*'s token ids (pad is the decoder start, eos 1) and scaled embeddings; the
# checkpoint stores its sinusoid tables
CASES = {
    "pegasus": Seq2SeqCase(
        {
            "model_type": "pegasus",
            **BART_SIZES,
            "scale_embedding": True,
            "pad_token_id": 0,
            "eos_token_id": 1,
            "decoder_start_token_id": 0,
        }
    ),
}
