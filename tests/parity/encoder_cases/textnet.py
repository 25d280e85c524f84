from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "textnet",
    "stem_out_channels": 8,
    "hidden_sizes": [8, 16, 32],
    "conv_layer_kernel_sizes": [[[3, 3], [1, 3]], [[3, 3], [3, 1], [3, 3]]],
    "conv_layer_strides": [[1, 2], [2, 1, 1]],
    "image_size": [30, 30],
    "num_channels": 3,  # not a TextNet setting (it reads stem_num_channels): the inputs' own
    "num_labels": 5,
    "initializer_range": 0.05,
}

CASES = {
    # a 4x4 last map, so the 2x2 pooler averages whole quarters; a 5x5 one overlaps them
    "textnet": EncoderCase(TINY, ("TextNetForImageClassification", "TextNetModel"), inputs="image"),
    "textnet:odd_map": EncoderCase(
        {**TINY, "image_size": [34, 34]}, ("TextNetModel",), inputs="image"
    ),
}
