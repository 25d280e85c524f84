from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.vit import VIT

CASES = {
    "vit_msn": EncoderCase(
        {"model_type": "vit_msn", **VIT},
        ("ViTMSNForImageClassification", "ViTMSNModel"),
        inputs="image",
    ),
}
