from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.wav2vec2 import AUDIO

# wav2vec2's shared speech sizes in the nested audio_config (400 samples make 19 frames, the
# padded row's 250 make 11); the positional conv's kernel is even, as OmniASR's must be, and
# hidden_act (which activates the convolutions too) is not wav2vec2's default gelu
TOP_LEVEL = ("vocab_size", "num_labels", "classifier_proj_size")
AUDIO_CONFIG = {**{k: v for k, v in AUDIO.items() if k not in TOP_LEVEL}, "hidden_act": "gelu_new"}

CASES = {
    "omniasr_ctc": EncoderCase(
        {
            "model_type": "omniasr_ctc",
            "vocab_size": 24,
            "initializer_range": 0.1,
            "audio_config": AUDIO_CONFIG,
        },
        ("OmniASRForCTC", "OmniASRCTCModel"),
        inputs="audio+channel",
    )
}
