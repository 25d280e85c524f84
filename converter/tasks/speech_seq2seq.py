"""automatic-speech-recognition by an encoder-decoder (Whisper): the text2text pair of
tasks/seq2seq.py with the speech encoder's input, as Optimum's ORTModelForSpeechSeq2Seq and
Transformers.js' automatic-speech-recognition pipeline load them, and for models of
onnxruntime-genai's whisper type (`genai_whisper`) also its encoder.onnx / decoder.onnx
(tasks/genai_speech.py), which read the same weights.

  onnx/encoder_model.onnx
    inputs:  input_features [batch_size, feature_size, encoder_sequence_length] float32 (the
             log-mel spectrogram of the model's feature extractor, cast to the graph's dtype)
    outputs: last_hidden_state [batch_size, encoder_sequence_length_out, d_model]
  onnx/decoder_model_merged.onnx: as text2text's, without encoder_attention_mask.

CTC models (an encoder with a vocabulary head) convert for the same task name in
tasks/audio_encoding.py; `SpeechRecognition` picks by the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.tasks.base import Component, as_model, new_graph, set_output
from converter.tasks.genai_speech import genai_speech_components
from converter.tasks.seq2seq import BATCH, ENCODER_FILE, Seq2SeqTask

SPEECH_TASK = "automatic-speech-recognition"


@dataclass(frozen=True)
class SpeechSeq2SeqTask(Seq2SeqTask):
    name: str = SPEECH_TASK

    def components(self, model, cfg, dtype: ir.DataType) -> list[Component]:
        components = super().components(model, cfg, dtype)
        if getattr(model, "genai_whisper", False):
            components += genai_speech_components(model, cfg, dtype)
        return components

    def encoder_component(self, model, cfg, dtype: ir.DataType) -> Component:
        graph = new_graph()
        builder = GraphBuilder(graph)
        name, dims = model.encoder_input()
        features = builder.input(name, ir.DataType.FLOAT, [BATCH, *dims])
        if dtype != ir.DataType.FLOAT:
            features = builder.op.Cast(features, to=dtype)
        hidden = model.encode(builder.op, features)
        out = [BATCH, "encoder_sequence_length_out", cfg.d_model]
        set_output(builder, hidden, "last_hidden_state", out, dtype)
        return Component("encoder", ENCODER_FILE, as_model(graph), model, {})


@dataclass(frozen=True)
class SpeechRecognition:
    """The task name CTC encoders and speech encoder-decoders share: an encoder-decoder model
    (one with `cross_kv`) gets SpeechSeq2SeqTask, any other the CTC task."""

    ctc: object
    name: str = SPEECH_TASK

    def components(self, model, cfg, dtype: ir.DataType) -> list[Component]:
        task = SpeechSeq2SeqTask() if hasattr(model, "cross_kv") else self.ctc
        return task.components(model, cfg, dtype)
