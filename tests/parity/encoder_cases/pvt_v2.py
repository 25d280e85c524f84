from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "pvt_v2",
    "image_size": 62,
    "num_encoder_blocks": 2,
    "depths": [1, 2],
    "sr_ratios": [2, 1],
    "hidden_sizes": [16, 32],
    "patch_sizes": [7, 3],
    "strides": [4, 2],
    "num_attention_heads": [1, 2],
    "mlp_ratios": [2, 2],
    "num_labels": 5,
}

CASES = {
    "pvt_v2": EncoderCase(TINY, ("PvtV2ForImageClassification", "PvtV2Model"), inputs="image"),
    # keys and values pooled to 7x7 (an 8x8 map: cells of one and two positions)
    "pvt_v2:linear_attention": EncoderCase(
        {**TINY, "linear_attention": True}, ("PvtV2Model",), inputs="image"
    ),
}
