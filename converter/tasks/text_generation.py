"""text-generation: a causal LM with its cache, in the layout onnxruntime-genai feeds."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.components.cache import KV, SLIDING_KV
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
# the static cache's portable contract: caches of max_seq_len slots updated at write_indices
WRITE_INDICES, NONPAD_KV_SEQLEN = "write_indices", "nonpad_kv_seqlen"
KEY_CACHE, VALUE_CACHE = "key_cache.%d", "value_cache.%d"
UPDATED_KEY_CACHE, UPDATED_VALUE_CACHE = "updated_key_cache.%d", "updated_value_cache.%d"
SCATTER_OPSET = 24  # TensorScatter, and Attention's nonpad_kv_seqlen


@dataclass
class StaticCacheInputs:
    """What a decoder over fixed-size caches reads instead of an attention mask: the slot of
    each row's first new token (its tokens already cached) and each row's valid slots once this
    step's tokens are in (rows are right-padded: padding sits past the valid slots)."""

    write_indices: ir.Value  # [batch]
    nonpad_kv_seqlen: ir.Value  # [batch]
    max_seq_len: int


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
    static: StaticCacheInputs | None = None  # in place of attention_mask (then None)
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

    `static_cache` fixes every cache at `max_seq_len` slots. Where GroupQueryAttention writes
    into its past in place (onnxruntime-genai's shared buffer), only the cache dims change.
    Elsewhere the contract is the portable one: no attention_mask; write_indices [batch] and
    nonpad_kv_seqlen [batch] (StaticCacheInputs); key_cache.{i} / value_cache.{i} in,
    updated_key_cache.{i} / updated_value_cache.{i} out (bind each to its input's buffer).
    """

    name: str = "text-generation"
    inputs_embeds: bool = False
    mrope: bool = False
    mrope_rows: int = 3  # position_ids' rows with `mrope`
    embeds_width: int | None = None  # inputs_embeds' width, when more is packed beside hidden
    ids_beside_embeds: bool = False
    last_logits_only: bool = False  # the prune-prefill-prefix feature
    past_key: str = "past_key_values.%d.key"
    past_value: str = "past_key_values.%d.value"
    present_key: str = "present.%d.key"
    present_value: str = "present.%d.value"
    kv_cache_dtype: str | None = None
    static_cache: bool = False
    max_seq_len: int | None = None

    def __post_init__(self) -> None:
        if self.kv_cache_dtype not in (None, *KV_CACHE_DTYPES):
            raise ConfigError(
                f"kv_cache_dtype {self.kv_cache_dtype!r}: use one of "
                f"{', '.join(KV_CACHE_DTYPES)} or None (the graph's float type)"
            )
        if self.static_cache and (self.kv_cache_dtype or self.last_logits_only):
            raise ConfigError(
                "the static cache does not combine with fp8-kv-cache or prune-prefill-prefix yet"
            )
        size = self.max_seq_len
        if not self.static_cache:
            if size is not None:
                raise ConfigError("max_seq_len sizes the static cache: it needs static_cache=True")
        elif isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(
                f"the static cache needs max_seq_len, a whole number >= 1, not {size!r}"
            )

    def components(self, model, cfg: ArchitectureConfig, dtype: ir.DataType) -> list[Component]:
        if self.mrope and not (cfg.rope and cfg.rope.mrope_section):
            raise ConfigError(
                "3-D position_ids need a multimodal rope: the config's rope has no mrope_section"
            )
        scatter = self.static_cache and not self._check_static(model, cfg)
        graph = new_graph()
        if scatter:
            graph.opset_imports[""] = SCATTER_OPSET
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
        attention_mask, static = None, None
        if scatter:
            static = StaticCacheInputs(
                builder.input(WRITE_INDICES, i64, [BATCH]),
                builder.input(NONPAD_KV_SEQLEN, i64, [BATCH]),
                self.max_seq_len,
            )
        else:
            total = [BATCH, "total_sequence_length"]
            attention_mask = builder.input("attention_mask", i64, total)
        positions = [self.mrope_rows, *seq] if self.mrope else seq
        position_ids = builder.input("position_ids", i64, positions)
        io = self.io_names(scatter)
        names = io["inputs"]["past_key_names"], io["inputs"]["past_value_names"]
        caches = model.caches()
        fp8 = Fp8Cache(graph, caches, dtype) if self.kv_cache_dtype else None
        stored = KV_CACHE_DTYPES[self.kv_cache_dtype] if fp8 else dtype
        past = [
            tuple(
                builder.input(name % i, stored, self._dims(shape, "past_sequence_length"))
                for name, shape in zip(names, (cache.key, cache.value), strict=True)
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
            static,
            last_only=self.last_logits_only,
        )
        logits, presents = model(builder.op, inputs)
        positions = 1 if self.last_logits_only else "sequence_length"
        set_output(builder, logits, "logits", [BATCH, positions, cfg.logits_size], dtype)
        names = io["outputs"]["present_key_names"], io["outputs"]["present_value_names"]
        for i, (present, cache) in enumerate(zip(presents, caches, strict=True)):
            if fp8:
                present = fp8.quantized(builder.op, i, *present)
            for name, value, shape in zip(names, present, (cache.key, cache.value), strict=True):
                set_output(builder, value, name % i, self._dims(shape), stored)
        if self.inputs_embeds:  # the token table, when the head is not tied to it
            drop_unused_initializers(graph)
        return [Component("decoder", MODEL_FILE, as_model(graph), model, io, caches)]

    def _check_static(self, model, cfg: ArchitectureConfig) -> bool:
        """Refuse, by name, a static cache the model cannot keep; whether its kernel writes
        into the cache in place (GroupQueryAttention) rather than the graph scattering."""
        kinds = {cache.kind for cache in model.caches()} - {KV, SLIDING_KV}
        if kinds:
            why = (
                f"its caches include {' and '.join(sorted(kinds))} state, not only keys and values"
            )
        elif self.inputs_embeds or self.mrope:
            why = "a decoder fed embeddings or 3-D positions (a multimodal model's) is not covered"
        elif not hasattr(model, "static_cache_refused"):
            why = "its model is not the generic decoder whose attention the contract covers"
        else:
            why = model.static_cache_refused()
        if why is None and self.max_seq_len > cfg.max_position_embeddings:
            why = (
                f"max_seq_len {self.max_seq_len} is past the model's "
                f"max_position_embeddings ({cfg.max_position_embeddings})"
            )
        if why:
            raise ConfigError(f"feature 'static-cache' cannot apply to {cfg.model_type}: {why}")
        return model.writes_cache_in_place

    def io_names(self, scatter: bool = False) -> dict:
        """The names genai_config.json declares for the decoder (with `scatter`, the static
        cache's portable contract, which onnxruntime-genai cannot feed)."""
        first = "inputs_embeds" if self.inputs_embeds else "input_ids"
        if scatter:
            return {
                "inputs": {
                    first: first,
                    "position_ids": "position_ids",
                    WRITE_INDICES: WRITE_INDICES,
                    NONPAD_KV_SEQLEN: NONPAD_KV_SEQLEN,
                    "past_key_names": KEY_CACHE,
                    "past_value_names": VALUE_CACHE,
                },
                "outputs": {
                    "logits": "logits",
                    "present_key_names": UPDATED_KEY_CACHE,
                    "present_value_names": UPDATED_VALUE_CACHE,
                },
            }
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

    def _dims(self, shape: tuple, sequence: str = "total_sequence_length") -> list:
        """A cache's dims after the batch; the sequence fixed at max_seq_len when static."""
        sequence = self.max_seq_len if self.static_cache else sequence
        return [BATCH, *(sequence if d == "sequence" else d for d in shape)]
