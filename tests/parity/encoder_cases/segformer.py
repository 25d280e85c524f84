from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "segformer",
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
    "segformer": EncoderCase(
        TINY, ("SegformerForImageClassification", "SegformerModel"), inputs="image"
    ),
    "segformer:tokens_last": EncoderCase(
        {**TINY, "reshape_last_stage": False},
        ("SegformerForImageClassification", "SegformerModel"),
        inputs="image",
    ),
}
