from tests.parity.encoder_cases import EncoderCase

# ResNet's config has no image size: `image_size` only sizes the test images
RESNET = {
    "embedding_size": 8,
    "hidden_sizes": [16, 32],
    "depths": [2, 1],
    "image_size": 32,
    "num_labels": 5,
}

CASES = {
    "resnet": EncoderCase(
        {"model_type": "resnet", **RESNET},
        ("ResNetForImageClassification", "ResNetModel"),
        inputs="image",
    ),
    "resnet:basic": EncoderCase(
        {
            "model_type": "resnet",
            **RESNET,
            "layer_type": "basic",
            "hidden_act": "gelu",
            "downsample_in_first_stage": True,
            "image_size": [36, 28],
        },
        ("ResNetModel",),
        inputs="image",
    ),
    "resnet:downsample-in-bottleneck": EncoderCase(
        {"model_type": "resnet", **RESNET, "downsample_in_bottleneck": True},
        ("ResNetModel",),
        inputs="image",
    ),
}
