from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.vit import VIT

CASES = {
    "ijepa": EncoderCase(
        {"model_type": "ijepa", **VIT},
        ("IJepaForImageClassification", "IJepaModel"),
        inputs="image",
    ),
}
