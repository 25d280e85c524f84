from tests.parity.encoder_cases import EncoderCase

TWO_STAGES = {
    "embed_dim": [16, 32],
    "num_heads": [1, 2],
    "depth": [1, 2],
    "patch_sizes": [7, 3],
    "patch_stride": [4, 2],
    "patch_padding": [2, 1],
    "mlp_ratio": [4.0, 2.0],
    "attention_drop_rate": [0.0, 0.0],
    "drop_rate": [0.0, 0.0],
    "drop_path_rate": [0.0, 0.0],
    "qkv_bias": [True, False],
    "cls_token": [False, True],
    "qkv_projection_method": ["dw_bn", "dw_bn"],
    "kernel_qkv": [3, 3],
    "padding_kv": [1, 1],
    "stride_kv": [2, 2],
    "padding_q": [1, 1],
    "stride_q": [1, 1],
}
TINY = {"model_type": "cvt", **TWO_STAGES, "image_size": 30, "num_labels": 5}

CASES = {
    "cvt": EncoderCase(TINY, ("CvtForImageClassification", "CvtModel"), inputs="image"),
    # no cls token: the model's features only (transformers' classifier needs it)
    "cvt:no_cls_token": EncoderCase(
        {**TINY, "cls_token": [False, False]}, ("CvtModel",), inputs="image"
    ),
}
