from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "mobilevit",
    "hidden_sizes": [16, 24, 32],
    "neck_hidden_sizes": [8, 16, 24, 32, 40, 48, 64],
    "num_attention_heads": 2,
    "num_labels": 5,
}

CASES = {
    # 72x72 images: the attention blocks meet 9x9, 5x5 and 3x3 maps, resized to even sides
    "mobilevit": EncoderCase(
        {**TINY, "image_size": 72},
        ("MobileViTForImageClassification", "MobileViTModel"),
        inputs="image",
    ),
    # 64x64 images: 8x8, 4x4 and 2x2 maps, no resizing; the last block dilated
    "mobilevit:output_stride_16": EncoderCase(
        {**TINY, "image_size": 64, "output_stride": 16}, ("MobileViTModel",), inputs="image"
    ),
}
