from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

CASES = {"mvp": Seq2SeqCase({"model_type": "mvp", **BART_SIZES})}
