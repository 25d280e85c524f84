from tests.parity.encoder_cases.wav2vec2 import audio_cases

# 19 frames squeeze to 9 (the last frame upsampled as zeros); the layer-norm variant's conv
# width equals the hidden size (no projection) and its positional kernel is odd
CASES = audio_cases(
    "sew",
    "SEW",
    {
        "": {"feat_extract_norm": "group", "squeeze_factor": 2},
        "layer": {
            "feat_extract_norm": "layer",
            "squeeze_factor": 2,
            "conv_dim": [16, 16, 64],
            "num_conv_pos_embeddings": 7,
        },
    },
)
