from tests.parity.encoder_cases import EncoderCase

# 16 mel bins subsampled 8x by three stride-2 convs (64 frames make 8, the padded row's 45
# make 6), a depthwise kernel wider than those frames, swish as released checkpoints use
PARAKEET = {
    "model_type": "parakeet_ctc",
    "vocab_size": 24,
    "pad_token_id": 23,
    "encoder_config": {
        "model_type": "parakeet_encoder",
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "hidden_act": "silu",
        "conv_kernel_size": 9,
        "subsampling_factor": 8,
        "subsampling_conv_channels": 8,
        "num_mel_bins": 16,
        "initializer_range": 0.1,
    },
}

CASES = {"parakeet_ctc": EncoderCase(PARAKEET, ("ParakeetForCTC",), inputs="mel")}
