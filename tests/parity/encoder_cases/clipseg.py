from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.clip import TEXT_TOWER, VISION_TOWER, two_towers

CASES = {
    # images of 48 pixels, where the positions are built for 32: the grid resized from 4 to 6
    "clipseg": EncoderCase(
        two_towers("clipseg", {**TEXT_TOWER, "eos_token_id": 60}, VISION_TOWER, projection_dim=48),
        ("CLIPSegModel",),
        inputs="text+image",
        image_size=48,
    ),
}
