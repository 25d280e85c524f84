from tests.parity.encoder_cases import EncoderCase

# 8 mel bins (32 stacked features); chunks of 12 frames, so the 64 frames make 6 chunks (the
# last padded), then 3 and 2 after the subsampling blocks 0 and 2 (32 and 16 frames; the
# padded row's 45 make 22 and 11); the self-conditioning after layer 1 of 4
GRANITE_SPEECH5_CTC = {
    "model_type": "granite_speech5_ctc",
    "vocab_size": 24,
    "pad_token_id": 0,
    "encoder_config": {
        "model_type": "granite_speech5_encoder",
        "vocab_size": 24,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_mel_bins": 8,
        "context_size": 12,
        "max_position_embeddings": 16,
        "conv_kernel_size": 5,
        "conv_expansion_factor": 2,
        "subsample_layers": [0, 2],
        "initializer_range": 0.1,
    },
}

# a separate CTC head, one subsampling block (the second), whole chunks of 8 at 64 frames, the
# widest distance table context_size allows, GELU feed-forwards, the self-conditioning after
# layer 0 of 2
UNTIED = {
    **GRANITE_SPEECH5_CTC,
    "tie_word_embeddings": False,
    "encoder_config": {
        **GRANITE_SPEECH5_CTC["encoder_config"],
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "hidden_act": "gelu",
        "context_size": 8,
        "max_position_embeddings": 8,
        "conv_kernel_size": 3,
        "subsample_layers": [1],
    },
}

CASES = {
    "granite_speech5_ctc": EncoderCase(
        GRANITE_SPEECH5_CTC, ("GraniteSpeech5ForCTC",), inputs="mel"
    ),
    "granite_speech5_ctc:untied": EncoderCase(UNTIED, ("GraniteSpeech5ForCTC",), inputs="mel"),
}
