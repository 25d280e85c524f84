from tests.parity.encoder_cases import EncoderCase

TINY = {
    "model_type": "mobilenet_v1",
    "depth_multiplier": 0.25,
    "image_size": 30,  # even and odd sides meet the stride-2 layers
    "num_labels": 5,
    "initializer_range": 0.1,
}

CASES = {
    "mobilenet_v1": EncoderCase(
        TINY, ("MobileNetV1ForImageClassification", "MobileNetV1Model"), inputs="image"
    ),
    "mobilenet_v1:torch_padding": EncoderCase(
        {**TINY, "tf_padding": False, "hidden_act": "relu"}, ("MobileNetV1Model",), inputs="image"
    ),
}
