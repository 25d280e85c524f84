"""wav2vec 2.0: the speech encoder whose layout the others share (models/speech_encoder.py)."""

from __future__ import annotations

from converter.config.audio import AudioRules
from converter.models.speech_encoder import SpeechEncoderModel
from converter.registry import Family

# what pre-training leaves in checkpoints and no task graph reads: the time-mask embedding,
# the quantizer and its projections
PRETRAINING_ONLY = (
    r"([a-z0-9_]+\.)?masked_spec_embed",
    r"quantizer\..*",
    r"project_(q|hid)\..*",
)

FAMILIES = [
    Family(
        "wav2vec2",
        SpeechEncoderModel,
        "convolutional feature encoder (group or layer norm), weight-normalised positional "
        "convolution, post-norm or pre-norm layers",
        ("facebook/wav2vec2-base-960h", "jonatasgrosman/wav2vec2-large-xlsr-53-english"),
        rules=AudioRules(),
        task="feature-extraction",
        category="audio",
        unused=PRETRAINING_ONLY,
        prefix="wav2vec2.",
    ),
]
