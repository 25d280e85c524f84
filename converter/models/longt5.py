"""LongT5: T5's decoder, and an encoder whose self-attention is local or transient-global.

transformers splits the encoder sequence into blocks of local_radius + 1 tokens and lets each
block attend to itself and its two neighbours, keeping only keys within local_radius. That is
the same as attention over the whole sequence with a band mask |key - query| <= local_radius,
which is what the graph does (memory quadratic in the length, the result the same). The
relative bias of the first layer covers the band, as transformers' per-block bias does.

Transient-global attention adds one key per block of global_block_size tokens: the sum of
the block's (normed) hidden states, RMS-normed by the layer's global_input_layer_norm and
projected by its k and v. Each token's block id comes from its absolute position, -1 on
padding, the trailing partial block folded into the last full one; the global keys of blocks
that hold no real token are hidden from real tokens. The first layer's
global_relative_attention_bias gives the bias of distance (global block - the token's block).
Every mask is folded into the bias, so the kernels run without a padding mask.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import onnx_ir as ir

from converter.components import RMSNorm
from converter.components.encoder_attention import encoder_attention
from converter.components.relative_buckets import pairwise_bias
from converter.config.reader import ConfigReader
from converter.config.seq2seq import Seq2SeqConfig
from converter.dtypes import NUMPY_OF
from converter.models.t5 import (
    T5_UNUSED,
    T5Attention,
    T5EncoderStack,
    T5LayerSelfAttention,
    T5Model,
    T5Rules,
    relative_bias,
)
from converter.registry import Family

LOCAL, TRANSIENT_GLOBAL = "local", "transient-global"


@dataclass(frozen=True)
class LongT5Settings:
    """LongT5's own settings (`cfg.extra["longt5"]`)."""

    attention: str  # encoder_attention_type: LOCAL or TRANSIENT_GLOBAL
    local_radius: int
    global_block_size: int


class LongT5Rules(T5Rules):
    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        cfg = super().read(r)
        attention = r.str("encoder_attention_type")
        if attention not in (LOCAL, TRANSIENT_GLOBAL):
            r.refuse("encoder_attention_type", f"LongT5 has {LOCAL} and {TRANSIENT_GLOBAL}")
        size = r.int("global_block_size")
        if attention == TRANSIENT_GLOBAL and size & (size - 1):
            # transformers finds each token's block by a float32 cumulative sum of 1 / size,
            # which drifts from position // size unless 1 / size is exact in binary
            r.refuse("global_block_size", "block ids are exact for powers of two only")
        settings = LongT5Settings(attention, r.int("local_radius", lo=0), size)
        return dataclasses.replace(cfg, extra={**cfg.extra, "longt5": settings})


def longt5_settings(cfg: Seq2SeqConfig) -> LongT5Settings:
    return cfg.extra["longt5"]


@dataclass(frozen=True)
class LocalContext:
    """What the first layer's bias is computed from, built once per graph."""

    positions: ir.Value  # [sequence]
    local_keep: ir.Value  # [batch, 1, sequence, sequence]: a real key within the radius
    low: ir.Value  # the dtype's lowest value, for what is hidden


@dataclass(frozen=True)
class GlobalContext(LocalContext):
    side_keep: ir.Value  # [batch, 1, sequence, globals]: the token sees that global key
    side_distance: ir.Value  # [batch, sequence, globals]: global block - the token's block
    blocks: ir.Value  # [batch, globals, sequence] one-hot in the graph's dtype: who sums where


class LongT5LocalAttention(T5Attention):
    def position_bias(self, op, context: LocalContext):
        bias = pairwise_bias(op, self.relative_attention_bias, context.positions, context.positions)
        return op.Where(context.local_keep, bias, context.low)


class LongT5TransientGlobalAttention(T5Attention):
    def __init__(self, cfg, dtype, relative):
        super().__init__(cfg, dtype, relative)
        owns = relative is not None
        self.global_relative_attention_bias = relative_bias(cfg, dtype, True) if owns else None
        self.global_input_layer_norm = RMSNorm(cfg.d_model, cfg.norm_eps, dtype)

    def position_bias(self, op, context: GlobalContext):
        local = LongT5LocalAttention.position_bias(self, op, context)
        side = self.global_relative_attention_bias(op, context.side_distance)
        side = op.Where(context.side_keep, op.Transpose(side, perm=[0, 3, 1, 2]), context.low)
        return op.Concat(local, side, axis=3)

    def transient_global(self, op, x, context: GlobalContext, kernel, bias):
        summed = self.global_input_layer_norm(op, op.MatMul(context.blocks, x))
        keys = op.Concat(x, summed, axis=1)  # the tokens, then the global keys
        q, k, v = self._proj(0)(op, x), self._proj(1)(op, keys), self._proj(2)(op, keys)
        return self._proj(3)(op, kernel(op, q, k, v, self.heads, self.scale, bias))


class LongT5LayerLocalSelfAttention(T5LayerSelfAttention):
    attention_name = "LocalSelfAttention"
    attention_cls = LongT5LocalAttention


class LongT5LayerTransientGlobalSelfAttention(T5LayerSelfAttention):
    attention_name = "TransientGlobalSelfAttention"
    attention_cls = LongT5TransientGlobalAttention

    def attend(self, op, h, kernel, context, bias):
        return self.attention(op, "transient_global", h, *context, kernel, bias)


class LongT5EncoderStack(T5EncoderStack):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int):
        super().__init__(cfg, dtype, layers)
        self.settings = longt5_settings(cfg)

    def self_attention_cls(self, cfg: Seq2SeqConfig) -> type:
        if longt5_settings(cfg).attention == LOCAL:
            return LongT5LayerLocalSelfAttention
        return LongT5LayerTransientGlobalSelfAttention

    def context(self, op, x, attention_mask):
        s = self.settings
        positions = op.Range(0, op.Squeeze(op.Shape(x, start=1, end=2), [0]), 1)
        real = op.Cast(attention_mask, to=ir.DataType.BOOL)  # [batch, sequence]
        distance = op.Abs(op.Sub(op.Unsqueeze(positions, [0]), op.Unsqueeze(positions, [1])))
        band = op.LessOrEqual(distance, s.local_radius)
        local_keep = op.And(band, op.Unsqueeze(real, [1, 2]))
        numpy_type = NUMPY_OF[self.dtype]
        low = op.Constant(value=ir.tensor(np.array(np.finfo(numpy_type).min, numpy_type)))
        if s.attention == LOCAL:
            return (LocalContext(positions, local_keep, low),)
        return (GlobalContext(positions, local_keep, low, *self._globals(op, positions, real)),)

    def _globals(self, op, positions, real):
        """(side_keep, side_distance, blocks) as transformers' _make_global_fixed_block_ids
        and _make_side_relative_position_ids give them."""
        size = self.settings.global_block_size
        block = op.Where(real, op.Unsqueeze(op.Div(positions, size), [0]), -1)
        ends = op.Equal(op.Mod(positions, size), size - 1)
        whole = op.ReduceSum(op.Cast(op.And(ends, real), to=ir.DataType.INT64), [1], keepdims=1)
        block = op.Min(block, op.Sub(whole, 1))  # [batch, sequence]
        count = op.Div(op.Squeeze(op.Shape(positions), [0]), size)
        ids = op.Range(0, count, 1)  # [globals]
        used = op.LessOrEqual(op.Unsqueeze(ids, [0]), op.ReduceMax(block, [1], keepdims=1))
        side_keep = op.Unsqueeze(op.Equal(op.Unsqueeze(real, [2]), op.Unsqueeze(used, [1])), [1])
        side_distance = op.Sub(op.Unsqueeze(ids, [0, 1]), op.Unsqueeze(block, [2]))
        owners = op.Equal(op.Unsqueeze(block, [1]), op.Unsqueeze(ids, [0, 2]))
        return side_keep, side_distance, op.Cast(owners, to=self.dtype)


class LongT5Model(T5Model):
    encoder_cls = LongT5EncoderStack

    def encoder_kernel(self, op, attention_mask):
        return encoder_attention(op, self.ep, None, self.dtype)  # the masks are in the bias


FAMILIES = [
    Family(
        "longt5",
        LongT5Model,
        "T5's decoder; an encoder with local (a band of local_radius) or transient-global "
        "(plus one summed key per block) self-attention",
        ("google/long-t5-tglobal-base", "google/long-t5-local-base"),
        rules=LongT5Rules(),
        task="text2text-generation",
        category="seq2seq",
        unused=T5_UNUSED,
    ),
]
