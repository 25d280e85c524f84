from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "mobilevitv2",
    "width_multiplier": 0.25,
    "n_attn_blocks": [1, 2, 1],
    "base_attn_unit_dims": [32, 48, 64],
    "num_labels": 5,
}

CASES = {
    # 72x72 images: the attention blocks meet 9x9, 5x5 and 3x3 maps (the odd row and column
    # left out of the patches)
    "mobilevitv2": EncoderCase(
        {**TINY, "image_size": 72},
        ("MobileViTV2ForImageClassification", "MobileViTV2Model"),
        inputs="image",
    ),
    "mobilevitv2:output_stride_8": EncoderCase(
        {**TINY, "image_size": 64, "output_stride": 8}, ("MobileViTV2Model",), inputs="image"
    ),
}
