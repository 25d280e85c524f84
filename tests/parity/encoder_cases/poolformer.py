from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "poolformer",
    "num_encoder_blocks": 2,
    "depths": [1, 2],
    "hidden_sizes": [16, 32],
    "patch_sizes": [7, 3],
    "strides": [4, 2],
    "padding": [2, 1],
    "image_size": 30,
    "num_labels": 5,
}

CASES = {
    "poolformer": EncoderCase(
        TINY, ("PoolFormerForImageClassification", "PoolFormerModel"), inputs="image"
    ),
    "poolformer:no_layer_scale": EncoderCase(
        {**TINY, "use_layer_scale": False, "pool_size": 5, "hidden_act": "relu"},
        ("PoolFormerModel",),
        inputs="image",
    ),
}
