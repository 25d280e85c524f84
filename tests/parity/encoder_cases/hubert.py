from tests.parity.encoder_cases.wav2vec2 import GROUP, LAYER, audio_cases

CASES = audio_cases(
    "hubert",
    "Hubert",
    {
        "": GROUP,
        "batch_norm": {**LAYER, "conv_pos_batch_norm": True, "feat_proj_layer_norm": False},
    },
)
