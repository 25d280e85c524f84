from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT

# small token-type tables (segment, column, row, previous label, ranks, numeric relation)
TINY = {**TEXT, "model_type": "tapas", "type_vocab_sizes": [2, 4, 3, 2, 5, 5, 3]}
HEADS = ("TapasModel", "TapasForMaskedLM", "TapasForSequenceClassification")

CASES = {
    "tapas": EncoderCase(TINY, HEADS, inputs="table"),
    # absolute positions
    "tapas:absolute": EncoderCase(
        {**TINY, "reset_position_index_per_cell": False}, ("TapasModel",), inputs="table"
    ),
}
