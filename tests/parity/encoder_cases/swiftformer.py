from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "swiftformer",
    "depths": [1, 2],
    "embed_dims": [16, 32],
    "image_size": 30,
    "num_labels": 5,
}

CASES = {
    "swiftformer": EncoderCase(
        TINY, ("SwiftFormerForImageClassification", "SwiftFormerModel"), inputs="image"
    ),
    "swiftformer:no_layer_scale": EncoderCase(
        {**TINY, "use_layer_scale": False, "hidden_act": "relu"},
        ("SwiftFormerModel",),
        inputs="image",
    ),
}
