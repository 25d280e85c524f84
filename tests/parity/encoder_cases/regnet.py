from tests.parity.encoder_cases import EncoderCase

# RegNet's config has no image size: `image_size` only sizes the test images
REGNET = {
    "embedding_size": 8,
    "hidden_sizes": [16, 32],
    "depths": [2, 1],
    "groups_width": 8,
    "image_size": 32,
    "num_labels": 5,
}

CASES = {
    "regnet": EncoderCase(
        {"model_type": "regnet", **REGNET},
        ("RegNetForImageClassification", "RegNetModel"),
        inputs="image",
    ),
    "regnet:x": EncoderCase(
        {
            "model_type": "regnet",
            **REGNET,
            "layer_type": "x",
            "downsample_in_first_stage": False,
            "image_size": [36, 28],
        },
        ("RegNetModel",),
        inputs="image",
    ),
}
