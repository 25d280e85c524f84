from tests.parity.encoder_cases import EncoderCase

CASES = {
    # a 6x6 grid of tokens, subsampled to 3x3, then 2x2
    "levit": EncoderCase(
        {
            "model_type": "levit",
            "image_size": 96,
            "hidden_sizes": [32, 48, 64],
            "num_attention_heads": [2, 3, 4],
            "depths": [1, 1, 1],
            "key_dim": [8, 8, 8],
            "num_labels": 5,
            "initializer_range": 0.14,
        },
        (
            "LevitForImageClassification",
            "LevitForImageClassificationWithTeacher",
            "LevitModel",
        ),
        inputs="image",
        calibrate=False,
    ),
}
