from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT

HEADS = ("ForMaskedLM", "ForSequenceClassification", "Model")

CASES = {
    "ernie": EncoderCase(
        {"model_type": "ernie", **TEXT, "use_task_id": True}, tuple(f"Ernie{h}" for h in HEADS)
    ),
    "ernie:no-task-types": EncoderCase(
        {"model_type": "ernie", **TEXT, "use_task_id": False}, ("ErnieForMaskedLM",)
    ),
}
