"""onnxruntime-genai's whisper layout (its "whisper" model type, as 0.18 runs it): two graphs
beside genai_config.json.

  encoder.onnx
    inputs:  audio_features [batch_size, num_mels, 3000] (the graph's dtype: genai's audio
             processor casts the log-mel spectrogram to it)
    outputs: encoder_hidden_states [batch_size, 1500, d_model]
             present_key_cross_{i} / present_value_cross_{i} [batch_size, heads, 1500, head_dim],
             one pair per decoder layer (distil-whisper: 2 decoder layers under 32 encoder ones)
  decoder.onnx
    inputs:  input_ids [batch_size, sequence_length] int64
             past_key_self_{i} / past_value_self_{i} [batch_size, heads, past_sequence_length,
             head_dim]
             past_key_cross_{i} / past_value_cross_{i} as the encoder gave them
    outputs: logits [batch_size, sequence_length, vocab_size], present_key_self_{i} /
             present_value_self_{i} (past + new positions)

genai 0.18 feeds exactly 3000 frames (it refuses any other count) and neither an attention mask
nor positions: the decoder reads its first position from the length of its past. The model
provides `part(GENAI_ENCODER)` (its encoder and the decoder layers' cross-attention key and
value projections) and `part(GENAI_DECODER)` (the decoder without them): a parameter belongs
to one graph.
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.errors import ConfigError
from converter.tasks.base import Component, as_model, new_graph, set_output

GENAI_ENCODER, GENAI_DECODER = "genai-encoder", "genai-decoder"
ENCODER_FILE, DECODER_FILE = "encoder.onnx", "decoder.onnx"
FRAMES = 3000  # what onnxruntime-genai 0.18's whisper feeds, 30 s at 100 frames a second
BATCH = "batch_size"
PAST, TOTAL = "past_sequence_length", "total_sequence_length"
ENCODER_IO = {
    "inputs": {"audio_features": "audio_features"},
    "outputs": {
        "encoder_hidden_states": "encoder_hidden_states",
        "cross_present_key_names": "present_key_cross_%d",
        "cross_present_value_names": "present_value_cross_%d",
    },
}
DECODER_IO = {
    "inputs": {
        "input_ids": "input_ids",
        "past_key_names": "past_key_self_%d",
        "past_value_names": "past_value_self_%d",
        "cross_past_key_names": "past_key_cross_%d",
        "cross_past_value_names": "past_value_cross_%d",
    },
    "outputs": {
        "logits": "logits",
        "present_key_names": "present_key_self_%d",
        "present_value_names": "present_value_self_%d",
    },
}


def genai_speech_components(model, cfg, dtype: ir.DataType) -> list[Component]:
    frames = model.input_frames()
    if frames != FRAMES:
        raise ConfigError(
            f"onnxruntime-genai's whisper feeds {FRAMES} log-mel frames; this encoder reads "
            f"{frames} (2 x 'max_source_positions')"
        )
    return [
        _encoder(model.part(GENAI_ENCODER), cfg, dtype),
        _decoder(model.part(GENAI_DECODER), cfg, dtype),
    ]


def _encoder(model, cfg, dtype: ir.DataType) -> Component:
    graph = new_graph()
    builder = GraphBuilder(graph)
    mels = cfg.extra["num_mel_bins"]
    features = builder.input("audio_features", dtype, [BATCH, mels, FRAMES])
    hidden = model.encode(builder.op, features)
    positions = FRAMES // 2
    set_output(builder, hidden, "encoder_hidden_states", [BATCH, positions, cfg.d_model], dtype)
    outputs = ENCODER_IO["outputs"]
    names = (outputs["cross_present_key_names"], outputs["cross_present_value_names"])
    caches = model.cross_caches()
    for i, (pair, cache) in enumerate(zip(model.cross_kv(builder.op, hidden), caches, strict=True)):
        for name, tensor, shape in zip(names, pair, (cache.key, cache.value), strict=True):
            set_output(builder, tensor, name % i, _dims(shape, positions), dtype)
    return Component("genai-encoder", ENCODER_FILE, as_model(graph), model, ENCODER_IO, caches)


def _decoder(model, cfg, dtype: ir.DataType) -> Component:
    graph = new_graph()
    builder = GraphBuilder(graph)
    inputs, outputs = DECODER_IO["inputs"], DECODER_IO["outputs"]
    input_ids = builder.input("input_ids", ir.DataType.INT64, [BATCH, "sequence_length"])
    self_caches, cross_caches = model.self_caches(), model.cross_caches()
    self_past = _inputs(builder, inputs, "past", self_caches, PAST, dtype)
    cross = _inputs(builder, inputs, "cross_past", cross_caches, FRAMES // 2, dtype)
    logits, presents = model.decode(builder.op, input_ids, None, self_past, cross)
    vocab = [BATCH, "sequence_length", cfg.vocab_size]
    set_output(builder, logits, outputs["logits"], vocab, dtype)
    for i, ((key, value), cache) in enumerate(zip(presents, self_caches, strict=True)):
        set_output(builder, key, outputs["present_key_names"] % i, _dims(cache.key, TOTAL), dtype)
        name = outputs["present_value_names"] % i
        set_output(builder, value, name, _dims(cache.value, TOTAL), dtype)
    caches = [*self_caches, *cross_caches]
    return Component("genai-decoder", DECODER_FILE, as_model(graph), model, DECODER_IO, caches)


def _dims(shape: tuple, length) -> list:
    return [BATCH, *(length if isinstance(d, str) else d for d in shape)]


def _inputs(builder, names: dict, kind: str, caches, length, dtype) -> list[tuple]:
    return [
        tuple(
            builder.input(names[f"{kind}_{part}_names"] % i, dtype, _dims(shape, length))
            for part, shape in (("key", cache.key), ("value", cache.value))
        )
        for i, cache in enumerate(caches)
    ]
