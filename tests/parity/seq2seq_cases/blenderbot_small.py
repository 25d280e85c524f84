from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

# scaled embeddings: the encoder scales its tokens, the decoder (transformers 5.24) does not
CASES = {
    "blenderbot-small": Seq2SeqCase(
        {"model_type": "blenderbot-small", **BART_SIZES, "scale_embedding": True}
    ),
}
