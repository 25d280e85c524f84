"""Speech-encoder tasks: one graph over the raw waveform, saved as `onnx/model.onnx` (Optimum's
and Transformers.js's names for the inputs and outputs).

Inputs:
  input_values    [batch_size, sequence_length] float32 in every dtype (what feature
                  extractors produce; the graph casts it), right-padded with zeros; for
                  spectrogram models (AST) the log-mel spectrogram [batch_size, frames, mel
                  bins] of the fixed size the processor makes; [batch_size, 1,
                  sequence_length] where the model says `waveform_channels` (OmniASR)
  input_features  [batch_size, sequence_length, mel bins] float32, in place of input_values
                  for mel-feature encoders (Parakeet, LASR): frames right-padded with zeros
  attention_mask  [batch_size, sequence_length] int64, 1 on real samples (or frames): only
                  for families whose processor returns one (layer-norm feature encoders, see
                  AudioEncoderConfig.uses_attention_mask). Group-norm models (wav2vec2-base)
                  take none, as transformers' pipelines and Optimum's exports feed them: their
                  padded rows match transformers run without a mask. Named by the model's
                  `mask_input` where its processor names it otherwise (OmniASR's padding_mask).
Outputs, over the frames the feature encoder makes of the samples:
  automatic-speech-recognition  logits [batch_size, frames, vocab] (CTC)
  audio-classification          logits [batch_size, num_labels]
  feature-extraction            last_hidden_state [batch_size, frames, hidden]
Frames past a row's length (from its mask) are padding: their values are not meaningful.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.tasks.base import Component, as_model, new_graph, set_float32_output
from converter.tasks.encoding import BATCH, ENCODER_FILE, SEQUENCE

FRAMES = "frames"
AUDIO_TASKS = ("audio-classification", "automatic-speech-recognition", "feature-extraction")


@dataclass
class AudioInputs:
    input_values: ir.Value  # float32 [batch, samples] (input_features: [batch, frames, bins])
    attention_mask: ir.Value | None  # int64 [batch, samples]; None: every sample is real


@dataclass(frozen=True)
class AudioEncodingTask:
    name: str

    def components(self, model, cfg, dtype: ir.DataType) -> list[Component]:
        graph = new_graph()
        builder = GraphBuilder(graph)
        spectrogram = getattr(cfg, "spectrogram_shape", None)
        mel_bins = getattr(cfg, "mel_bins", None)
        samples = [BATCH, SEQUENCE] if spectrogram is None else [BATCH, *spectrogram]
        if getattr(model, "waveform_channels", None):
            samples = [BATCH, model.waveform_channels, SEQUENCE]
        name = "input_values"
        if mel_bins is not None:
            name, samples = "input_features", [BATCH, SEQUENCE, mel_bins]
        input_values = builder.input(name, ir.DataType.FLOAT, samples)
        mask = None
        if cfg.uses_attention_mask:
            name = getattr(model, "mask_input", "attention_mask")
            mask = builder.input(name, ir.DataType.INT64, [BATCH, SEQUENCE])
        outputs = model(builder.op, AudioInputs(input_values, mask))
        for name, (value, dims) in outputs.items():
            set_float32_output(builder, value, name, dims, dtype)
        return [Component("encoder", ENCODER_FILE, as_model(graph), model, {})]
