from tests.parity.encoder_cases import EncoderCase

# PoolFormer's config has no image size: `image_size` only sizes the test images
POOLFORMER = {
    "hidden_sizes": [16, 32],
    "depths": [2, 1],
    "num_encoder_blocks": 2,
    "patch_sizes": [7, 3],
    "strides": [4, 2],
    "padding": [2, 1],
    "layer_scale_init_value": 0.5,
    "image_size": 32,
    "num_labels": 5,
}

CASES = {
    "poolformer": EncoderCase(
        {"model_type": "poolformer", **POOLFORMER},
        ("PoolFormerForImageClassification", "PoolFormerModel"),
        inputs="image",
    ),
    "poolformer:unscaled": EncoderCase(
        {
            "model_type": "poolformer",
            **POOLFORMER,
            "use_layer_scale": False,
            "pool_size": 5,
            "image_size": [36, 28],
        },
        ("PoolFormerModel",),
        inputs="image",
    ),
}
