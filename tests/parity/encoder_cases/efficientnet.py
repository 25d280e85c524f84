from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "efficientnet",
    "width_coefficient": 0.25,
    "depth_coefficient": 0.5,  # one or two blocks a stage
    "hidden_dim": 320,  # the last conv's channels at this width
    "depthwise_padding": [2],  # block 2 (stride 2) pads both sides alike
    "image_size": 30,
    "num_labels": 5,
    "initializer_range": 0.1,
}

CASES = {
    "efficientnet": EncoderCase(
        TINY, ("EfficientNetForImageClassification", "EfficientNetModel"), inputs="image"
    ),
    "efficientnet:max_pool": EncoderCase(
        {**TINY, "pooling_type": "max", "hidden_act": "gelu"},
        ("EfficientNetModel",),
        inputs="image",
    ),
}
