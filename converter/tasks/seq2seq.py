"""Encoder-decoder generation (text2text-generation, translation, summarization): two graphs
under `onnx/`, named and shaped as Optimum's ORTModelForSeq2SeqLM and Transformers.js'
seq2seq models load them (other dtypes beside them: `encoder_model_fp16.onnx`, ...).

  onnx/encoder_model.onnx
    inputs:  the model's `encoder_inputs`: input_ids, attention_mask [batch_size,
             encoder_sequence_length] int64 for text (speech models name theirs)
    outputs: last_hidden_state [batch_size, encoder_sequence_length, d_model]
  onnx/decoder_model_merged.onnx
    inputs, in this order (Optimum pairs its cache with the cache inputs by position):
             encoder_attention_mask [batch_size, encoder_sequence_length] int64 (only where
                 the encoder reads an attention_mask)
             input_ids [batch_size, decoder_sequence_length] int64
             encoder_hidden_states [batch_size, encoder_sequence_length, d_model]
             per layer i: past_key_values.{i}.decoder.key / .value
                              [batch_size, heads, past_decoder_sequence_length, head_dim]
                          past_key_values.{i}.encoder.key / .value
                              [batch_size, heads, encoder_sequence_length_out, head_dim]
             use_cache_branch bool [1]
    outputs: logits [batch_size, decoder_sequence_length, vocab] (float32 in every dtype: both
             clients compute on them), then per layer present.{i}.decoder.key / .value (past +
             new tokens) and present.{i}.encoder.key / .value

Both clients feed every past on the first step (Optimum zeros of length 0; Transformers.js
sizes them from the declared dims: `batch_size` is the batch, every other named dim 0) with
use_cache_branch false, then the presents back with it true; on those steps both keep their
first cross-attention cache and ignore the encoder presents. One graph serves both steps
without an If: use_cache_branch false keeps none of the past and projects the whole encoder
output; true keeps all of the past and projects an empty slice of it, so the presents are the
past passed through. Every projection stays in the main graph, where lowering fuses, counts and
quantizes it. Hidden states and caches are in the graph's dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.tasks.base import Component, as_model, new_graph, set_float32_output, set_output

ENCODER_FILE = "onnx/encoder_model.onnx"
DECODER_FILE = "onnx/decoder_model_merged.onnx"
SEQ2SEQ_TASKS = ("summarization", "text2text-generation", "translation")
BATCH = "batch_size"  # Transformers.js fills this name with the batch when it sizes the cache
ENCODER_SEQUENCE, DECODER_SEQUENCE = "encoder_sequence_length", "decoder_sequence_length"
PAST = "past_decoder_sequence_length"
TOTAL = "past_decoder_sequence_length + decoder_sequence_length"
CROSS = "encoder_sequence_length_out"
PAST_NAME = "past_key_values.{i}.{part}.{kind}"
PRESENT_NAME = "present.{i}.{part}.{kind}"


@dataclass(frozen=True)
class Seq2SeqTask:
    name: str

    def components(self, model, cfg, dtype: ir.DataType) -> list[Component]:
        return [
            self.encoder_component(model.part("encoder"), cfg, dtype),
            self.decoder_component(model.part("decoder"), cfg, dtype),
        ]

    def encoder_component(self, model, cfg, dtype: ir.DataType) -> Component:
        graph = new_graph()
        builder = GraphBuilder(graph)
        inputs = [
            builder.input(name, input_type, dims)
            for name, (input_type, dims) in model.encoder_inputs(dtype).items()
        ]
        hidden = model.encode(builder.op, *inputs)
        dims = [BATCH, ENCODER_SEQUENCE, cfg.d_model]
        set_output(builder, hidden, "last_hidden_state", dims, dtype)
        return Component("encoder", ENCODER_FILE, as_model(graph), model, {})

    def decoder_component(self, model, cfg, dtype: ir.DataType) -> Component:
        graph = new_graph()
        builder = GraphBuilder(graph)
        op, i64 = builder.op, ir.DataType.INT64
        # Optimum's input order: it zips its flat (self key, self value, cross key, cross
        # value) per-layer cache with the graph's cache inputs in declaration order
        encoder_mask = None  # speech encoders' outputs have no padding to mask
        if "attention_mask" in model.encoder_inputs(dtype):
            dims = [BATCH, ENCODER_SEQUENCE]
            encoder_mask = builder.input("encoder_attention_mask", i64, dims)
        input_ids = builder.input("input_ids", i64, [BATCH, DECODER_SEQUENCE])
        encoder_hidden = builder.input(
            "encoder_hidden_states", dtype, [BATCH, ENCODER_SEQUENCE, cfg.d_model]
        )
        self_caches, cross_caches = model.self_caches(), model.cross_caches()
        self_past, cross_past = [], []
        for i, (own, cross) in enumerate(zip(self_caches, cross_caches, strict=True)):
            self_past.append(_past(builder, i, own, "decoder", PAST, dtype))
            cross_past.append(_past(builder, i, cross, "encoder", CROSS, dtype))
        use_cache = builder.input("use_cache_branch", ir.DataType.BOOL, [1])

        cached = op.Cast(use_cache, to=i64)  # [1]: 1 on the cached steps
        self_kept = [tuple(_head(op, t, cached, axis=2) for t in pair) for pair in self_past]
        fresh = op.Cast(op.Not(use_cache), to=i64)
        source = _head(op, encoder_hidden, fresh, axis=1)  # empty on the cached steps
        computed = model.cross_kv(op, source)
        cross = [
            tuple(
                op.Concat(_head(op, past, cached, axis=2), new, axis=2)
                for past, new in zip(past_pair, new_pair, strict=True)
            )
            for past_pair, new_pair in zip(cross_past, computed, strict=True)
        ]
        logits, presents = model.decode(op, input_ids, encoder_mask, self_kept, cross)
        dims = [BATCH, DECODER_SEQUENCE, cfg.vocab_size]
        set_float32_output(builder, logits, "logits", dims, dtype)
        layers = zip(presents, cross, self_caches, cross_caches, strict=True)
        for i, (own, cross_pair, own_cache, cross_cache) in enumerate(layers):
            _present(builder, i, own, own_cache, "decoder", TOTAL, dtype)
            _present(builder, i, cross_pair, cross_cache, "encoder", CROSS, dtype)
        caches = [*self_caches, *cross_caches]
        return Component("decoder", DECODER_FILE, as_model(graph), model, {}, caches)


def _head(op, value, keep, axis: int):
    """`value` cut to its first `keep` [1] (0 or 1) times its length along `axis`: all or none."""
    length = op.Mul(op.Shape(value, start=axis, end=axis + 1), keep)
    return op.Slice(value, [0], length, [axis])


def _dims(shape: tuple, length: str) -> list:
    return [BATCH, *(length if isinstance(d, str) else d for d in shape)]


def _past(builder, i: int, cache, part: str, length: str, dtype: ir.DataType) -> tuple:
    return tuple(
        builder.input(PAST_NAME.format(i=i, part=part, kind=kind), dtype, _dims(shape, length))
        for kind, shape in (("key", cache.key), ("value", cache.value))
    )


def _present(builder, i: int, pair, cache, part: str, length: str, dtype: ir.DataType) -> None:
    for kind, tensor, shape in zip(("key", "value"), pair, (cache.key, cache.value), strict=True):
        name = PRESENT_NAME.format(i=i, part=part, kind=kind)
        set_output(builder, tensor, name, _dims(shape, length), dtype)
