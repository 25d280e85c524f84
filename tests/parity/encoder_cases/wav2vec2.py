from tests.parity.encoder_cases import EncoderCase

# the sizes most speech-encoder cases share: a three-layer feature encoder of stride 20 (400
# samples make 19 frames, the padded row's 250 make 11), a positional conv of even kernel
AUDIO = {
    "vocab_size": 24,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "conv_dim": [16, 16, 32],
    "conv_kernel": [10, 3, 3],
    "conv_stride": [5, 2, 2],
    "conv_bias": True,
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4,
    "classifier_proj_size": 24,
    "num_labels": 3,
    "initializer_range": 0.1,
}
# group norm, post-norm layers (wav2vec2-base); layer norm, pre-norm layers (wav2vec2-large)
GROUP = {"feat_extract_norm": "group", "do_stable_layer_norm": False}
LAYER = {"feat_extract_norm": "layer", "do_stable_layer_norm": True}
AUDIO_HEADS = ("ForCTC", "ForSequenceClassification", "Model")


def audio_cases(model_type: str, prefix: str, variants: dict[str, dict]) -> dict[str, EncoderCase]:
    """One case per variant (`""`: the model type itself), each with the three heads."""
    heads = tuple(f"{prefix}{h}" for h in AUDIO_HEADS)
    return {
        f"{model_type}:{name}" if name else model_type: EncoderCase(
            {"model_type": model_type, **AUDIO, **settings}, heads, inputs="audio"
        )
        for name, settings in variants.items()
    }


CASES = audio_cases(
    "wav2vec2",
    "Wav2Vec2",
    {
        "": GROUP,
        "stable": {**LAYER, "num_conv_pos_embeddings": 7, "use_weighted_layer_sum": True},
    },
)
