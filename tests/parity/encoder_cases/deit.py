from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.vit import VIT

CASES = {
    "deit": EncoderCase(
        {"model_type": "deit", **VIT},
        ("DeiTForImageClassification", "DeiTForImageClassificationWithTeacher", "DeiTModel"),
        inputs="image",
    ),
}
