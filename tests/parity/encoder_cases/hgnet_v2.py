from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "hgnet_v2",
    "stem_channels": [3, 8, 16],
    "stage_in_channels": [16, 32],
    "stage_mid_channels": [8, 16],
    "stage_out_channels": [32, 64],
    "stage_num_blocks": [1, 2],
    "stage_downsample": [False, True],
    "stage_downsample_strides": [2, 2],
    "stage_light_block": [False, True],
    "stage_kernel_size": [3, 5],
    "stage_numb_of_layers": [2, 2],
    "hidden_sizes": [32, 64],
    "depths": [1, 2],
    "embedding_size": 16,
    "image_size": 30,  # not an HGNetV2 setting: the size the parity inputs take
    "num_labels": 5,
    "initializer_range": 0.2,
}

CASES = {
    "hgnet_v2": EncoderCase(TINY, ("HGNetV2ForImageClassification",), inputs="image"),
    "hgnet_v2:affine": EncoderCase(
        {**TINY, "use_learnable_affine_block": True, "hidden_act": "gelu"},
        ("HGNetV2ForImageClassification",),
        inputs="image",
    ),
}
