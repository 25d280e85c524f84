from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.roberta import MLM_AND_CLASSIFIER, ROBERTA

CASES = {
    "ibert": EncoderCase(
        {"model_type": "ibert", **ROBERTA, "quant_mode": False},
        tuple(f"IBert{h}" for h in (*MLM_AND_CLASSIFIER, "ForQuestionAnswering")),
    ),
}
