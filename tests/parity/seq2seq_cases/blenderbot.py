from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

CASES = {"blenderbot": Seq2SeqCase({"model_type": "blenderbot", **BART_SIZES})}
