from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.vit import VIT

CASES = {
    # a bias per layer and a shared one, absolute positions, mean pooling, layer scales
    "beit": EncoderCase(
        {
            "model_type": "beit",
            **VIT,
            "use_relative_position_bias": True,
            "use_shared_relative_position_bias": True,
            "use_absolute_position_embeddings": True,
            "layer_scale_init_value": 0.5,
        },
        ("BeitForImageClassification", "BeitModel"),
        inputs="image",
    ),
    # the cls token pooled after a final LayerNorm, no layer scales
    "beit:cls-pooled": EncoderCase(
        {
            "model_type": "beit",
            **VIT,
            "use_relative_position_bias": True,
            "use_mean_pooling": False,
            "layer_scale_init_value": 0.0,
        },
        ("BeitForImageClassification", "BeitModel"),
        inputs="image",
    ),
    "data2vec-vision": EncoderCase(
        {"model_type": "data2vec-vision", **VIT, "use_shared_relative_position_bias": True},
        ("Data2VecVisionForImageClassification", "Data2VecVisionModel"),
        inputs="image",
    ),
}
