from tests.parity.encoder_cases import EncoderCase

# 26 frames of 16 mel bins in patches of 8, strides 4 (frequency) and 6 (time): 3 x 4 patches
AST = {
    "model_type": "audio-spectrogram-transformer",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "patch_size": 8,
    "frequency_stride": 4,
    "time_stride": 6,
    "max_length": 26,
    "num_mel_bins": 16,
    "num_labels": 3,
    "initializer_range": 0.1,
}

CASES = {
    "audio-spectrogram-transformer": EncoderCase(
        AST, ("ASTForAudioClassification", "ASTModel"), inputs="spectrogram"
    ),
}
