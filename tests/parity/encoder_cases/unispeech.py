from tests.parity.encoder_cases.wav2vec2 import GROUP, LAYER, audio_cases

CASES = {
    **audio_cases("unispeech", "UniSpeech", {"": LAYER}),
    **audio_cases("unispeech-sat", "UniSpeechSat", {"": GROUP}),
}
