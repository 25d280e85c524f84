from tests.parity.encoder_cases import EncoderCase

# three stages: a 4x4 stem on 32x32 images, then 8x8, 4x4 and 2x2 maps
CONVNEXT = {
    "hidden_sizes": [16, 24, 32],
    "depths": [2, 1, 1],
    "num_stages": 3,
    "image_size": 32,
    "num_labels": 5,
    "initializer_range": 0.2,
}

CASES = {
    "convnext": EncoderCase(
        {"model_type": "convnext", **CONVNEXT, "layer_scale_init_value": 0.5},
        ("ConvNextForImageClassification", "ConvNextModel"),
        inputs="image",
    ),
    "convnext:unscaled": EncoderCase(
        {"model_type": "convnext", **CONVNEXT, "layer_scale_init_value": 0.0, "hidden_act": "relu"},
        ("ConvNextModel",),
        inputs="image",
    ),
    "convnextv2": EncoderCase(
        {"model_type": "convnextv2", **CONVNEXT},
        ("ConvNextV2ForImageClassification", "ConvNextV2Model"),
        inputs="image",
    ),
}
