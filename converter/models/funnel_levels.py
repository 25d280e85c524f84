"""What Funnel Transformer's attention reads at each pooling level, computed in the graph from
the run-time length: the padding mask, the token-type ids, the relative distances between query
and key positions, and the pooling that takes a level to the next.

Pooling (separate_cls, truncate_seq): the CLS token stays first and alone, the last token is
dropped, and the tokens between are averaged in pairs (1 and 2, 3 and 4, ...; an odd one out
alone), so a level of length L pools to ceil(L / 2). The mask takes the pair's minimum and the
token types the pair's first. Level b's token k sits at 2^b (k - 1) + 1 (CLS at 1 - 2^b): the
positions stay evenly spaced, so every query-key distance is a multiple of the keys' spacing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir

from converter.components.encoder_attention import encoder_attention

I64, F32 = ir.DataType.INT64, ir.DataType.FLOAT
CLS_TYPE = 2  # a token of this type is in both segments


@dataclass
class Level:
    """One pooling level: `length` a 1-d [1] tensor, `mask` [batch, length] (1 kept),
    `types` [batch, length], `spacing` 2^level."""

    length: object
    mask: object
    types: object
    spacing: int


def scalar(op, length):
    return op.Squeeze(length, [0])


def pool_pairs(op, length):
    """The two source indices of each pooled token: CLS with itself, then (1, 2), (3, 4), ...,
    the last pair's second index clipped to the last kept token."""
    n = scalar(op, length)
    k = op.Range(0, op.Div(op.Add(n, 1), 2), 1)
    first = op.Max(op.Sub(op.Mul(k, 2), 1), op.Constant(value_int=0))
    second = op.Min(op.Mul(k, 2), op.Sub(n, 2))
    return first, second


def pool_level(op, level: Level) -> tuple[Level, object, object]:
    """The next level and the index pairs that make it."""
    first, second = pool_pairs(op, level.length)
    mask = op.Min(op.Gather(level.mask, first, axis=1), op.Gather(level.mask, second, axis=1))
    types = op.Gather(level.types, first, axis=1)
    pooled = Level(op.Shape(first), mask, types, level.spacing * 2)
    return pooled, first, second


def mean_pool(op, hidden, first, second):
    both = op.Add(op.Gather(hidden, first, axis=1), op.Gather(hidden, second, axis=1))
    return op.Mul(both, op.CastLike(op.Constant(value_float=0.5), hidden))


class Attending:
    """What one attention reads: queries at level `q`, keys at level `k` (the same level, or
    the level before for the layer that pools the queries). `positions` is the relative table
    [table, d_model] and `index` [q length, k length] the row of it each pair reads; `same`
    [batch, 1, q length, k length] whether the two tokens share a segment; `cls_keep` zeroes
    the relative terms of pairs that involve CLS."""

    def __init__(self, op, ep, dtype: ir.DataType, d_model: int, q: Level, k: Level):
        self.kernel = encoder_attention(op, ep, k.mask, dtype, queries=1)
        lq, lk = scalar(op, q.length), scalar(op, k.length)
        self.positions, self.index = relative_table(op, d_model, dtype, q, k, lq, lk)
        self.same = same_segment(op, q.types, k.types)
        rows = op.Cast(op.Greater(op.Range(0, lq, 1), 0), to=dtype)
        cols = op.Cast(op.Greater(op.Range(0, lk, 1), 0), to=dtype)
        self.cls_keep = op.Mul(op.Unsqueeze(rows, [1]), op.Unsqueeze(cols, [0]))


def same_segment(op, q_types, k_types):
    q_types, k_types = op.Unsqueeze(q_types, [1, 3]), op.Unsqueeze(k_types, [1, 2])
    is_cls = op.Or(op.Equal(q_types, CLS_TYPE), op.Equal(k_types, CLS_TYPE))
    return op.Or(op.Equal(q_types, k_types), is_cls)


def relative_table(op, d_model: int, dtype: ir.DataType, q: Level, k: Level, lq, lk):
    """Sinusoids of every distance a query of `q` has to a key of `k`, largest first, and for
    each pair the row holding its distance. With keys `step` apart and queries `ratio` key
    steps apart, query i and key j are (ratio * i - j + offset) steps apart; the offset is
    -1 when the queries were pooled from the keys (their CLS sits one key step further back)."""
    step, ratio = k.spacing, q.spacing // k.spacing
    offset = -1 if ratio == 2 else 0
    top = op.Add(op.Mul(op.Sub(lq, 1), ratio), offset)  # the largest distance, in steps
    rows = op.Range(0, op.Add(op.Mul(op.Sub(lq, 1), ratio), lk), 1)
    distance = op.Cast(op.Mul(op.Sub(top, rows), step), to=F32)
    half = d_model // 2
    inv_freq = 1.0 / np.power(np.float32(10000), np.arange(half, dtype=np.float32) / half)
    frequency = op.Constant(value=ir.tensor(inv_freq.astype(np.float32)))
    angles = op.Mul(op.Unsqueeze(distance, [1]), op.Unsqueeze(frequency, [0]))
    table = op.Cast(op.Concat(op.Sin(angles), op.Cos(angles), axis=-1), to=dtype)
    i, j = op.Range(0, lq, 1), op.Range(0, lk, 1)
    reversed_i = op.Mul(op.Sub(op.Sub(lq, 1), i), ratio)
    index = op.Add(op.Unsqueeze(reversed_i, [1]), op.Unsqueeze(j, [0]))
    return table, index
