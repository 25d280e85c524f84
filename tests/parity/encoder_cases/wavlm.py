from tests.parity.encoder_cases.wav2vec2 import GROUP, LAYER, audio_cases

# 16 buckets: distances of 4 frames and more (up to the 18 of 19 frames) take the
# logarithmic buckets
BUCKETS = {"num_buckets": 16, "max_bucket_distance": 20}

CASES = audio_cases("wavlm", "WavLM", {"": {**GROUP, **BUCKETS}, "stable": {**LAYER, **BUCKETS}})
