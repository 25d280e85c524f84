from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.clip import TEXT_TOWER, VISION_TOWER, two_towers

# NaFlex: a 4 x 4 position grid, resized to each image's patches (tests/parity/
# encoder_reference.py cuts images of 4 x 5, 2 x 3 and 5 x 3 patches)
NAFLEX_TOWER = {**VISION_TOWER, "num_patches": 16}
del NAFLEX_TOWER["image_size"]

CASES = {
    "siglip": EncoderCase(
        two_towers("siglip", TEXT_TOWER, VISION_TOWER),
        ("SiglipModel", "SiglipForImageClassification"),
        inputs="text+image",
    ),
    "siglip2": EncoderCase(
        two_towers("siglip2", TEXT_TOWER, NAFLEX_TOWER), ("Siglip2Model",), inputs="text+image"
    ),
}
