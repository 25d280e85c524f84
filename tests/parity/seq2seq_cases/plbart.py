from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

# scale_embedding is left to PLBartConfig's default (True)
CASES = {"plbart": Seq2SeqCase({"model_type": "plbart", **BART_SIZES})}
