from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "bit",
    "embedding_size": 16,
    "hidden_sizes": [32, 64],
    "depths": [1, 2],
    "num_groups": 4,
    "image_size": 30,
    "num_labels": 5,
}

CASES = {
    "bit": EncoderCase(TINY, ("BitForImageClassification", "BitModel"), inputs="image"),
    # post-activation bottlenecks, TensorFlow "same" padding computed at run time, the second
    # stage dilated instead of strided (output stride 4)
    "bit:bottleneck_same": EncoderCase(
        {
            **TINY,
            "layer_type": "bottleneck",
            "global_padding": "SAME",
            "embedding_dynamic_padding": True,
            "output_stride": 4,
        },
        ("BitForImageClassification", "BitModel"),
        inputs="image",
    ),
}
