from tests.parity.encoder_cases import EncoderCase

# 32x32 images in 4x4 patches: an 8x8 map of 4x4 windows (shifted on odd blocks), then 4x4
# (one window, unshifted)
SWIN = {
    "embed_dim": 16,
    "depths": [2, 2],
    "num_heads": [2, 4],
    "image_size": 32,
    "patch_size": 4,
    "window_size": 4,
    "num_labels": 5,
    "initializer_range": 0.1,
}
# a 9x7 map: windows of 3 padded to 9x9, odd maps padded before merging, 5x4 then
UNEVEN = {"image_size": [36, 28], "window_size": 3, "depths": [2, 3]}

CASES = {
    "swin": EncoderCase(
        {"model_type": "swin", **SWIN}, ("SwinForImageClassification", "SwinModel"), inputs="image"
    ),
    "swin:padded": EncoderCase(
        {"model_type": "swin", **SWIN, **UNEVEN, "use_absolute_embeddings": True},
        ("SwinModel",),
        inputs="image",
    ),
    "donut-swin": EncoderCase(
        {"model_type": "donut-swin", **SWIN},
        ("DonutSwinForImageClassification", "DonutSwinModel"),
        inputs="image",
    ),
    "swinv2": EncoderCase(
        {"model_type": "swinv2", **SWIN},
        ("Swinv2ForImageClassification", "Swinv2Model"),
        inputs="image",
    ),
    "swinv2:padded": EncoderCase(
        {"model_type": "swinv2", **SWIN, **UNEVEN, "pretrained_window_sizes": [4, 0]},
        ("Swinv2Model",),
        inputs="image",
    ),
}
