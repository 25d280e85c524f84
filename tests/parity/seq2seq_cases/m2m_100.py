from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

# M2M100Config's defaults: scaled embeddings, ReLU; left padding, which its positions skip
CASES = {"m2m_100": Seq2SeqCase({"model_type": "m2m_100", **BART_SIZES}, inputs="text-left-padded")}
