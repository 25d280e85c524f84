from tests.parity.encoder_cases import EncoderCase

HEADS = ("MobileNetV2ForImageClassification", "MobileNetV2Model")
# 30x30 images: stride-2 layers meet even sides (padded after only) and odd ones (both sides)
TINY = {
    "model_type": "mobilenet_v2",
    "depth_multiplier": 0.25,
    "image_size": 30,
    "num_labels": 5,
    "initializer_range": 0.1,
}

CASES = {
    "mobilenet_v2": EncoderCase({**TINY, "finegrained_output": False}, HEADS, inputs="image"),
    # torch's own padding, the stem's extra 1x1 layer, dilated blocks past output stride 8
    "mobilenet_v2:torch_padding": EncoderCase(
        {
            **TINY,
            "tf_padding": False,
            "first_layer_is_expansion": False,
            "output_stride": 8,
            "hidden_act": "relu",
        },
        ("MobileNetV2Model",),
        inputs="image",
    ),
}
