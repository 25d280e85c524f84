from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.chinese_clip import BERT_TOWER
from tests.parity.encoder_cases.clip import two_towers
from tests.parity.encoder_cases.efficientnet import TINY

# EfficientNet's tiny tower without its top conv: the last block's 80 channels (320 * 0.25) are
# the image embeddings, so the text is projected to them. Images of 96 leave 3x3 maps after the
# last stride (BatchNorm statistics measured on more than the batch's three images), and no
# drop-connect runs while they are measured
VISION = {k: v for k, v in TINY.items() if k not in ("model_type", "num_labels", "hidden_dim")}

CASES = {
    "align": EncoderCase(
        two_towers(
            "align",
            BERT_TOWER,
            {**VISION, "image_size": 96, "drop_connect_rate": 0.0},
            projection_dim=80,
            temperature_init_value=0.7,
        ),
        ("AlignModel",),
        inputs="text+image",
    ),
}
