from tests.parity.encoder_cases import EncoderCase

# colour-cluster tokens (vocab: 15 clusters and the start token), quick GELU
TINY = {
    "model_type": "imagegpt",
    "vocab_size": 16,
    "n_positions": 16,
    "n_embd": 32,
    "n_layer": 2,
    "n_head": 2,
}
HEADS = ("ImageGPTModel", "ImageGPTForImageClassification")

CASES = {
    "imagegpt": EncoderCase(TINY, HEADS),
    # a wider MLP, unscaled scores divided by each layer's number, another activation
    "imagegpt:scaled": EncoderCase(
        {
            **TINY,
            "n_inner": 48,
            "scale_attn_weights": False,
            "scale_attn_by_inverse_layer_idx": True,
            "activation_function": "gelu_new",
            "num_labels": 3,
        },
        HEADS,
    ),
}
