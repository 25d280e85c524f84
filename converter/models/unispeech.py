"""UniSpeech and UniSpeech-SAT: wav2vec2's encoder (models/speech_encoder.py) under their own
base-model names; their pre-training heads (CTC over phonemes, speaker projection) are not
converted."""

from __future__ import annotations

from converter.config.audio import AudioRules
from converter.models.speech_encoder import SpeechEncoderModel
from converter.models.wav2vec2 import PRETRAINING_ONLY
from converter.registry import Family


class UniSpeechModel(SpeechEncoderModel):
    body_name = "unispeech"


class UniSpeechSatModel(SpeechEncoderModel):
    body_name = "unispeech_sat"


FAMILIES = [
    Family(
        "unispeech",
        UniSpeechModel,
        "wav2vec2's encoder, pre-trained with a phoneme CTC objective",
        ("microsoft/unispeech-large-1500h-cv",),
        rules=AudioRules(),
        task="feature-extraction",
        category="audio",
        unused=(*PRETRAINING_ONLY, r"ctc_proj\..*"),
        prefix="unispeech.",
    ),
    Family(
        "unispeech-sat",
        UniSpeechSatModel,
        "wav2vec2's encoder, pre-trained with speaker-aware objectives",
        ("microsoft/unispeech-sat-base-plus", "microsoft/unispeech-sat-base-100h-libri-ft"),
        rules=AudioRules(),
        task="feature-extraction",
        category="audio",
        unused=(
            *PRETRAINING_ONLY,
            r"speaker_proj\..*",
            r"label_embeddings_concat",
            r"layer_norm_for_extract\..*",
        ),
        prefix="unispeech_sat.",
    ),
]
