from tests.parity.encoder_cases import EncoderCase

# the sizes the ViT-layout cases share: 32x32 images in 8x8 patches (16 patches)
VIT = {
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "image_size": 32,
    "patch_size": 8,
    "num_labels": 5,
    "layer_norm_eps": 1e-6,
    "initializer_range": 0.1,
}

CASES = {
    "vit": EncoderCase(
        {"model_type": "vit", **VIT}, ("ViTForImageClassification", "ViTModel"), inputs="image"
    ),
    # a rectangular image, a pooler of its own width and activation, no q/k/v biases
    "vit:rectangular": EncoderCase(
        {
            "model_type": "vit",
            **VIT,
            "image_size": [24, 40],
            "pooler_output_size": 48,
            "pooler_act": "gelu",
            "qkv_bias": False,
        },
        ("ViTModel",),
        inputs="image",
    ),
    "vit_msn": EncoderCase(
        {"model_type": "vit_msn", **VIT},
        ("ViTMSNForImageClassification", "ViTMSNModel"),
        inputs="image",
    ),
}
