from tests.parity.encoder_cases.wav2vec2 import audio_cases

# three positional convs of odd kernel
CASES = audio_cases(
    "data2vec-audio",
    "Data2VecAudio",
    {"": {"num_conv_pos_embeddings": 3, "conv_pos_kernel_size": 5}},
)
