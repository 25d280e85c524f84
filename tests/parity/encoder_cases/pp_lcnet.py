from tests.parity.encoder_cases import EncoderCase

CASES = {
    "pp_lcnet": EncoderCase(
        {
            "model_type": "pp_lcnet",
            "scale": 0.25,
            "stem_channels": 16,
            "class_expand": 64,
            "block_configs": [
                [[3, 16, 32, 1, False]],
                [[3, 32, 64, 2, False]],
                [[3, 64, 64, 1, False]],
                [[3, 64, 128, 2, False], [5, 128, 128, 1, True]],
                [[5, 128, 128, 2, True]],
            ],
            "image_size": 30,  # not a PP-LCNet setting: the size the parity inputs take
            "num_channels": 3,  # likewise (the stem reads three channels)
            "num_labels": 5,
            "initializer_range": 0.2,
        },
        ("PPLCNetForImageClassification",),
        inputs="image",
    ),
}
