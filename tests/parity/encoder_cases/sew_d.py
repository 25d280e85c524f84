from tests.parity.encoder_cases.wav2vec2 import audio_cases

# 19 frames squeeze to 9 (the padded row's 11 to 6) and are upsampled back; 8 position buckets
# over at most 32 positions put distances past 4 into log buckets. The first variant has the
# convolution after the first layer (transformers builds it only with hidden_dropout_prob set),
# shared keys, both relative terms and a normed relative table; the second its own position
# projections, c2p alone, an unnormed table and a layer-norm feature encoder.
DEBERTA = {"squeeze_factor": 2, "position_buckets": 8, "max_position_embeddings": 32}
CASES = audio_cases(
    "sew-d",
    "SEWD",
    {
        "": {
            **DEBERTA,
            "feat_extract_norm": "group",
            "conv_kernel_size": 3,
            "hidden_dropout_prob": 0.1,
        },
        "c2p": {
            **DEBERTA,
            "feat_extract_norm": "layer",
            "share_att_key": False,
            "pos_att_type": ["c2p"],
            "norm_rel_ebd": "none",
            "hidden_act": "gelu",
        },
    },
)
