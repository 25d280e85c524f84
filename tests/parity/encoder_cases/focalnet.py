from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "focalnet",
    "embed_dim": 16,
    "depths": [1, 2],
    "focal_levels": [2, 3],
    "focal_windows": [3, 3],
    "image_size": 30,  # 30 is no multiple of the patch: padded to 32, then 8x8 -> 4x4
    "num_labels": 5,
}

CASES = {
    "focalnet": EncoderCase(
        TINY, ("FocalNetForImageClassification", "FocalNetModel"), inputs="image"
    ),
    # post-norms, conv embeddings, layer scale, a normalized modulator
    "focalnet:post_norm": EncoderCase(
        {
            **TINY,
            "use_post_layernorm": True,
            "use_post_layernorm_in_modulation": True,
            "use_conv_embed": True,
            "use_layerscale": True,
            "normalize_modulator": True,
        },
        ("FocalNetModel",),
        inputs="image",
    ),
}
