from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.clip import TEXT_TOWER, two_towers
from tests.parity.encoder_cases.dinov2 import DINO

# a DINOv2-with-registers vision tower (the widths must match: neither tower is projected);
# temperature_init_value away from its default, as the checkpoint stores the temperature
VISION = {k: v for k, v in DINO.items() if k != "num_labels"}

CASES = {
    "tipsv2": EncoderCase(
        two_towers(
            "tipsv2",
            {**TEXT_TOWER, "max_position_embeddings": 16},
            {**VISION, "num_register_tokens": 2},
            temperature_init_value=0.07,
        ),
        ("Tipsv2Model",),
        inputs="text+image",
    ),
    # the SwiGLU MLP (`w12` packing gate and up), without registers
    "tipsv2:swiglu": EncoderCase(
        two_towers(
            "tipsv2",
            {**TEXT_TOWER, "max_position_embeddings": 16},
            {**VISION, "num_register_tokens": 0, "use_swiglu_ffn": True},
        ),
        ("Tipsv2Model",),
        inputs="text+image",
    ),
}
