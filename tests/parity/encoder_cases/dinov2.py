from tests.parity.encoder_cases import EncoderCase

# DINOv2 reads mlp_ratio where ViT reads intermediate_size
DINO = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "mlp_ratio": 3,
    "image_size": 32,
    "patch_size": 8,
    "num_labels": 5,
    "layerscale_value": 0.5,
    "initializer_range": 0.1,
}
HEADS = ("ForImageClassification", "Model")

CASES = {
    "dinov2": EncoderCase(
        {"model_type": "dinov2", **DINO}, tuple(f"Dinov2{h}" for h in HEADS), inputs="image"
    ),
    "dinov2:swiglu": EncoderCase(
        {"model_type": "dinov2", **DINO, "use_swiglu_ffn": True}, ("Dinov2Model",), inputs="image"
    ),
    "dinov2_with_registers": EncoderCase(
        {"model_type": "dinov2_with_registers", **DINO, "num_register_tokens": 3},
        tuple(f"Dinov2WithRegisters{h}" for h in HEADS),
        inputs="image",
    ),
}
