"""automatic-speech-recognition by an encoder-decoder (Whisper): the text2text pair of
tasks/seq2seq.py with the speech encoder's inputs (the model's `encoder_inputs`: Whisper's
input_features [batch_size, num_mel_bins, frames] float32) and no encoder_attention_mask, as
Optimum's ORTModelForSpeechSeq2Seq and Transformers.js' automatic-speech-recognition pipeline
load them; for models of onnxruntime-genai's whisper type (`genai_whisper`) also its
encoder.onnx / decoder.onnx (tasks/genai_speech.py), bound to the same weights.

CTC models (an encoder with a vocabulary head) convert for the same task name in
tasks/audio_encoding.py; `SpeechRecognition` picks by the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir

from converter.tasks.base import Component
from converter.tasks.genai_speech import genai_speech_components
from converter.tasks.seq2seq import Seq2SeqTask

SPEECH_TASK = "automatic-speech-recognition"


@dataclass(frozen=True)
class SpeechSeq2SeqTask(Seq2SeqTask):
    name: str = SPEECH_TASK

    def components(self, model, cfg, dtype: ir.DataType) -> list[Component]:
        components = super().components(model, cfg, dtype)
        if getattr(model, "genai_whisper", False):
            components += genai_speech_components(model, cfg, dtype)
        return components


@dataclass(frozen=True)
class SpeechRecognition:
    """The task name CTC encoders and speech encoder-decoders share: an encoder-decoder model
    (one with `cross_kv`) gets SpeechSeq2SeqTask, any other the CTC task."""

    ctc: object
    name: str = SPEECH_TASK

    def components(self, model, cfg, dtype: ir.DataType) -> list[Component]:
        task = SpeechSeq2SeqTask() if hasattr(model, "cross_kv") else self.ctc
        return task.components(model, cfg, dtype)
