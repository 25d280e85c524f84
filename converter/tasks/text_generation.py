"""text-generation: a causal LM with its cache, in the layout onnxruntime-genai feeds."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.components.fp8_cache import KV_CACHE_DTYPES, Fp8Cache
from converter.config import ArchitectureConfig
from converter.errors import ConfigError
from converter.tasks.base import (
    Component,
    as_model,
    drop_unused_initializers,
    new_graph,
    set_output,
)

MODEL_FILE = "model.onnx"
# Transformers.js sizes the empty first-step cache from the declared input shapes: it fills
# `batch_size` with the batch and every other named dim with 0, so the batch must be named so.
BATCH = "batch_size"


@dataclass
class DecoderInputs:
    """What a decoder model reads: token ids [batch, sequence] or, when `embedded`, their
    embeddings [batch, sequence, hidden]; the mask over past + new tokens; positions
    [batch, sequence] (or [3, batch, sequence] for mrope); each layer's (key, value) past;
    `input_ids` beside the embeddings where the decoder reads both (a VLM whose mask depends
    on which tokens are image tokens)."""

    tokens: ir.Value
    embedded: bool
    attention_mask: ir.Value
    position_ids: ir.Value
    past: list[tuple[ir.Value, ir.Value]]
    input_ids: ir.Value | None = None
    last_only: bool = False  # logits of each row's last new token alone


@dataclass(frozen=True)
class TextGenerationTask:
    """One `decoder` component.

    inputs:  input_ids [batch, sequence_length] (or inputs_embeds [batch, sequence_length,
             hidden] with `inputs_embeds`, and input_ids too with `ids_beside_embeds`: a
             decoder whose mask reads them, as onnxruntime-genai feeds a decoder declaring
             both), attention_mask [batch, total_sequence_length],
             position_ids [batch, sequence_length] (or [3, batch, sequence_length] with
             `mrope`), past_key_values.{i}.key / .value [batch, *the layer's cache shape]
    outputs: logits [batch, sequence_length, vocab_size] (with `last_logits_only`: [batch, 1,
             vocab_size], each row's last new token whose attention_mask is 1),
             present.{i}.key / .value

    The caches are in the graph's float type, or `kv_cache_dtype` ("float8e4m3fn": the
    fp8-kv-cache feature, converter/components/fp8_cache.py).
    """

    name: str = "text-generation"
    inputs_embeds: bool = False
    mrope: bool = False
    embeds_width: int | None = None  # inputs_embeds' width, when more is packed beside hidden
    ids_beside_embeds: bool = False
    last_logits_only: bool = False  # the prune-prefill-prefix feature
    past_key: str = "past_key_values.%d.key"
    past_value: str = "past_key_values.%d.value"
    present_key: str = "present.%d.key"
    present_value: str = "present.%d.value"
    kv_cache_dtype: str | None = None

    def __post_init__(self) -> None:
        if self.kv_cache_dtype not in (None, *KV_CACHE_DTYPES):
            raise ConfigError(
                f"kv_cache_dtype {self.kv_cache_dtype!r}: use one of "
                f"{', '.join(KV_CACHE_DTYPES)} or None (the graph's float type)"
            )

    def components(self, model, cfg: ArchitectureConfig, dtype: ir.DataType) -> list[Component]:
        if self.mrope and not (cfg.rope and cfg.rope.mrope_section):
            raise ConfigError(
                "3-D position_ids need a multimodal rope: the config's rope has no mrope_section"
            )
        graph = new_graph()
        builder = GraphBuilder(graph)
        i64 = ir.DataType.INT64
        seq = [BATCH, "sequence_length"]
        ids = None
        if self.inputs_embeds:
            width = self.embeds_width or cfg.hidden_size
            tokens = builder.input("inputs_embeds", dtype, [*seq, width])
            if self.ids_beside_embeds:
                ids = builder.input("input_ids", i64, seq)
        else:
            tokens = builder.input("input_ids", i64, seq)
        attention_mask = builder.input("attention_mask", i64, [BATCH, "total_sequence_length"])
        position_ids = builder.input("position_ids", i64, [3, *seq] if self.mrope else seq)
        caches = model.caches()
        fp8 = Fp8Cache(graph, caches, dtype) if self.kv_cache_dtype else None
        stored = KV_CACHE_DTYPES[self.kv_cache_dtype] if fp8 else dtype
        past = [
            (
                builder.input(self.past_key % i, stored, _dims(cache.key, "past_sequence_length")),
                builder.input(
                    self.past_value % i, stored, _dims(cache.value, "past_sequence_length")
                ),
            )
            for i, cache in enumerate(caches)
        ]
        if fp8:
            past = [fp8.dequantized(builder.op, i, *pair) for i, pair in enumerate(past)]
        inputs = DecoderInputs(
            tokens,
            self.inputs_embeds,
            attention_mask,
            position_ids,
            past,
            ids,
            last_only=self.last_logits_only,
        )
        logits, presents = model(builder.op, inputs)
        positions = 1 if self.last_logits_only else "sequence_length"
        set_output(builder, logits, "logits", [BATCH, positions, cfg.logits_size], dtype)
        for i, ((key, value), cache) in enumerate(zip(presents, caches, strict=True)):
            if fp8:
                key, value = fp8.quantized(builder.op, i, key, value)
            set_output(builder, key, self.present_key % i, _dims(cache.key), stored)
            set_output(builder, value, self.present_value % i, _dims(cache.value), stored)
        if self.inputs_embeds:  # the token table, when the head is not tied to it
            drop_unused_initializers(graph)
        return [Component("decoder", MODEL_FILE, as_model(graph), model, self.io_names(), caches)]

    def io_names(self) -> dict:
        """The names genai_config.json declares for the decoder."""
        first = "inputs_embeds" if self.inputs_embeds else "input_ids"
        return {
            "inputs": {
                first: first,
                **({"input_ids": "input_ids"} if self.ids_beside_embeds else {}),
                "attention_mask": "attention_mask",
                "position_ids": "position_ids",
                "past_key_names": self.past_key,
                "past_value_names": self.past_value,
            },
            "outputs": {
                "logits": "logits",
                "present_key_names": self.present_key,
                "present_value_names": self.present_value,
            },
        }


def _dims(shape: tuple, sequence: str = "total_sequence_length") -> list:
    return [BATCH, *(sequence if d == "sequence" else d for d in shape)]
