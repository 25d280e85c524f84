from tests.parity.encoder_cases import EncoderCase

# a quarter of the released widths; odd image sides exercise TensorFlow's SAME padding. A
# larger BatchNorm eps keeps 27 random layers well conditioned: with 1e-3, float32 torch itself
# drifts 1e-4 from float64 (near-constant channels divided by their tiny deviation)
MOBILENET = {
    "depth_multiplier": 0.25,
    "image_size": [35, 33],
    "num_labels": 5,
    "layer_norm_eps": 0.05,
}
HEADS = ("ForImageClassification", "Model")

CASES = {
    "mobilenet_v1": EncoderCase(
        {"model_type": "mobilenet_v1", **MOBILENET},
        tuple(f"MobileNetV1{h}" for h in HEADS),
        inputs="image",
    ),
    "mobilenet_v1:padded": EncoderCase(
        {"model_type": "mobilenet_v1", **MOBILENET, "tf_padding": False},
        ("MobileNetV1Model",),
        inputs="image",
    ),
    "mobilenet_v2": EncoderCase(
        {"model_type": "mobilenet_v2", **MOBILENET},
        tuple(f"MobileNetV2{h}" for h in HEADS),
        inputs="image",
    ),
    # symmetric padding, the stem's own expansion, strides past 8 turned into dilations
    "mobilenet_v2:dilated": EncoderCase(
        {
            "model_type": "mobilenet_v2",
            **MOBILENET,
            "tf_padding": False,
            "first_layer_is_expansion": False,
            "output_stride": 8,
        },
        ("MobileNetV2Model",),
        inputs="image",
    ),
}
