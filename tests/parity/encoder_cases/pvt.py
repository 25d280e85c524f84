from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "pvt",
    "image_size": 64,
    "num_encoder_blocks": 2,
    "depths": [1, 2],
    "sequence_reduction_ratios": [2, 1],  # the second stage attends every token
    "hidden_sizes": [16, 32],
    "patch_sizes": [4, 2],
    "strides": [4, 2],
    "num_attention_heads": [1, 2],
    "mlp_ratios": [2, 2],
    "num_labels": 5,
}

CASES = {
    "pvt": EncoderCase(TINY, ("PvtForImageClassification", "PvtModel"), inputs="image"),
}
