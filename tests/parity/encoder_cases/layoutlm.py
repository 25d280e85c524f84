from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

CASES = {
    "layoutlm": EncoderCase(
        {"model_type": "layoutlm", **TEXT, "max_2d_position_embeddings": 48},
        tuple(f"LayoutLM{h}" for h in TEXT_HEADS),
        inputs="layout",
    ),
}
