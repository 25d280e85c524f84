from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

# Opus-MT's token ids: pad doubles as the decoder start, eos is 0; embeddings scaled
OPUS = {**BART_SIZES, "scale_embedding": True, "bos_token_id": None, "eos_token_id": 0}

CASES = {
    "marian": Seq2SeqCase(
        {"model_type": "marian", **OPUS, "pad_token_id": 127, "decoder_start_token_id": 127}
    ),
    # a table per stack: the encoder's 96 rows, the decoder's (and the tied head's) 128
    "marian:separate-vocabs": Seq2SeqCase(
        {
            "model_type": "marian",
            **OPUS,
            "vocab_size": 96,
            "decoder_vocab_size": 128,
            "share_encoder_decoder_embeddings": False,
            "pad_token_id": 95,
            "decoder_start_token_id": 95,
        }
    ),
}
