from tests.parity.encoder_cases.wav2vec2 import AUDIO, audio_cases

# swish, as released checkpoints use; a depthwise kernel wider than the padded row's frames
CONFORMER = {
    "hidden_act": "swish",
    "conv_depthwise_kernel_size": 5,
    "vocab_size": AUDIO["vocab_size"],
}

CASES = audio_cases(
    "wav2vec2-conformer",
    "Wav2Vec2Conformer",
    {
        "": {**CONFORMER, "feat_extract_norm": "group", "position_embeddings_type": "relative"},
        "rotary": {**CONFORMER, "feat_extract_norm": "layer", "position_embeddings_type": "rotary"},
    },
)
