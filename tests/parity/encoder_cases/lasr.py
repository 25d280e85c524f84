from tests.parity.encoder_cases import EncoderCase

# 16 mel bins; two unpadded stride-2 convs of kernel 5 (64 frames make 13, the padded row's
# 45 make 9); an even depthwise kernel (torch's "same" pads it unevenly), biases everywhere
# the config allows them, residual weights other than the defaults
LASR = {
    "model_type": "lasr_ctc",
    "vocab_size": 24,
    "pad_token_id": 0,
    "encoder_config": {
        "model_type": "lasr_encoder",
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "hidden_act": "silu",
        "attention_bias": True,
        "convolution_bias": True,
        "conv_kernel_size": 8,
        "subsampling_conv_channels": 32,
        "subsampling_conv_kernel_size": 5,
        "num_mel_bins": 16,
        "feed_forward_residual_weights": [1.25, 0.75],
        "conv_residual_weights": [1.5, 0.5],
        "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
        "initializer_range": 0.1,
    },
}

CASES = {"lasr_ctc": EncoderCase(LASR, ("LasrForCTC",), inputs="mel")}
