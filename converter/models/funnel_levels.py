"""What Funnel Transformer's attention reads at each pooling level, computed in the graph from
the run-time length: the padding mask, the token-type ids, the positions, and the pooling that
takes a level to the next.

Pooling with separate_cls (and truncate_seq): the CLS token stays first and alone, the last
token is dropped, and the tokens between are averaged (or maxed) in pairs (1 and 2, 3 and 4,
...; an odd one out alone); without separate_cls the pairs are (0, 1), (2, 3), ... Either way a
level of length L pools to ceil(L / 2); the mask takes the pair's minimum, the token types and
the positions the pair's first. A level too short to pool (2 tokens, 1 without separate_cls)
stays as it is, as in transformers. For relative_shift attention level b's token k sits at
2^b k, less 2^b - 1 under separate_cls (CLS then one step before the first pair): the
positions stay evenly spaced, so every query-key distance is a multiple of the keys' spacing.
Factorized attention reads the pooled tokens' original positions instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir

from converter.components.encoder_attention import encoder_attention

F32 = ir.DataType.FLOAT
CLS_TYPE = 2  # a token of this type is in both segments


@dataclass(frozen=True)
class Layout:
    """The config's pooling and attention settings."""

    separate_cls: bool
    pooling: str  # "mean" or "max"
    pool_q_only: bool
    factorized: bool  # attention_type "factorized" (else "relative_shift")


@dataclass
class Level:
    """One pooling level: `length` a 1-d [1] tensor, `mask` [batch, length] (1 kept),
    `types` [batch, length], `positions` [length] (float, the tokens' first-level positions),
    `spacing` 2^level."""

    length: object
    mask: object
    types: object
    positions: object
    spacing: int


def scalar(op, length):
    return op.Squeeze(length, [0])


def first_level(op, length, mask, types) -> Level:
    positions = op.Cast(op.Range(0, scalar(op, length), 1), to=F32)
    return Level(length, mask, types, positions, 1)


def pool_pairs(op, length, separate_cls: bool):
    """The two source indices of each pooled token, the pair's second clipped to the last
    token pooled: CLS with itself, then (1, 2), (3, 4), ... (separate_cls: the last token
    dropped), else (0, 1), (2, 3), ... A level of 2 tokens or fewer (1 without separate_cls)
    is not pooled, as transformers skips the pooling there: each token is its own pair."""
    n = scalar(op, length)
    pools = op.Greater(n, 2 if separate_cls else 1)
    k = op.Range(0, op.Where(pools, op.Div(op.Add(n, 1), 2), n), 1)
    if separate_cls:
        first = op.Max(op.Sub(op.Mul(k, 2), 1), op.Constant(value_int=0))
        second = op.Min(op.Mul(k, 2), op.Sub(n, 2))
    else:
        first, second = op.Mul(k, 2), op.Min(op.Add(op.Mul(k, 2), 1), op.Sub(n, 1))
    return op.Where(pools, first, k), op.Where(pools, second, k)


def pool_level(op, level: Level, separate_cls: bool) -> tuple[Level, object, object]:
    """The next level and the index pairs that make it."""
    first, second = pool_pairs(op, level.length, separate_cls)
    mask = op.Min(op.Gather(level.mask, first, axis=1), op.Gather(level.mask, second, axis=1))
    types = op.Gather(level.types, first, axis=1)
    positions = op.Gather(level.positions, first)
    pooled = Level(op.Shape(first), mask, types, positions, level.spacing * 2)
    return pooled, first, second


def pool(op, hidden, first, second, kind: str):
    """Each pooled token: its pair's mean or maximum."""
    a, b = op.Gather(hidden, first, axis=1), op.Gather(hidden, second, axis=1)
    if kind == "max":
        return op.Max(a, b)
    return op.Mul(op.Add(a, b), op.CastLike(op.Constant(value_float=0.5), hidden))


class Attending:
    """What one attention reads: queries at level `q`, keys at level `k` (the same level, or
    the level before for the layer that pools the queries under pool_q_only).
    relative_shift: `positions` is the relative table [table, d_model] and `index` [q length,
    k length] the row of it each pair reads. factorized: `factors` are phi, pi [q length,
    d_model] and psi, omega [k length, d_model] of the paper's appendix A.2.2.
    `same` [batch, 1, q length, k length] says whether the two tokens share a segment;
    `cls_keep` (separate_cls) zeroes the relative terms of pairs that involve CLS."""

    def __init__(self, op, ep, dtype, d_model: int, layout: Layout, q: Level, k: Level):
        self.kernel = encoder_attention(op, ep, k.mask, dtype, queries=1)
        lq, lk = scalar(op, q.length), scalar(op, k.length)
        self.positions = self.index = self.factors = None
        if layout.factorized:
            self.factors = factorized(op, d_model, dtype, q.positions, k.positions)
        else:
            offset = -1 if layout.separate_cls and q.spacing != k.spacing else 0
            self.positions, self.index = relative_table(op, d_model, dtype, q, k, lq, lk, offset)
        self.same = same_segment(op, q.types, k.types)
        self.cls_keep = None
        if layout.separate_cls:
            rows = op.Cast(op.Greater(op.Range(0, lq, 1), 0), to=dtype)
            cols = op.Cast(op.Greater(op.Range(0, lk, 1), 0), to=dtype)
            self.cls_keep = op.Mul(op.Unsqueeze(rows, [1]), op.Unsqueeze(cols, [0]))


def inverse_frequencies(op, d_model: int):
    half = d_model // 2
    inv_freq = 1.0 / np.power(np.float32(10000), np.arange(half, dtype=np.float32) / half)
    return op.Constant(value=ir.tensor(inv_freq.astype(np.float32)))


def sinusoids(op, d_model: int, values):
    """sin and cos of values [n] times each inverse frequency: two [n, d_model / 2]."""
    angles = op.Mul(op.Unsqueeze(values, [1]), op.Unsqueeze(inverse_frequencies(op, d_model), [0]))
    return op.Sin(angles), op.Cos(angles)


def factorized(op, d_model: int, dtype, q_positions, k_positions):
    """phi = [sin, sin], pi = [cos, cos] at the query positions; psi = [cos, sin],
    omega = [-sin, cos] at the key positions."""
    q_sin, q_cos = sinusoids(op, d_model, q_positions)
    k_sin, k_cos = sinusoids(op, d_model, k_positions)
    parts = (
        (q_sin, q_sin),
        (q_cos, q_cos),
        (k_cos, k_sin),
        (op.Neg(k_sin), k_cos),
    )
    return tuple(op.Cast(op.Concat(a, b, axis=-1), to=dtype) for a, b in parts)


def same_segment(op, q_types, k_types):
    q_types, k_types = op.Unsqueeze(q_types, [1, 3]), op.Unsqueeze(k_types, [1, 2])
    is_cls = op.Or(op.Equal(q_types, CLS_TYPE), op.Equal(k_types, CLS_TYPE))
    return op.Or(op.Equal(q_types, k_types), is_cls)


def relative_table(op, d_model: int, dtype, q: Level, k: Level, lq, lk, offset: int):
    """Sinusoids of every distance a query of `q` has to a key of `k`, largest first, and for
    each pair the row holding its distance. With keys `step` apart and queries `ratio` key
    steps apart, query i and key j are (ratio * i - j + offset) steps apart; the offset is
    -1 where separate_cls pooled the queries from the keys (their CLS sits one key step
    further back)."""
    step, ratio = k.spacing, q.spacing // k.spacing
    top = op.Add(op.Mul(op.Sub(lq, 1), ratio), offset)  # the largest distance, in steps
    rows = op.Range(0, op.Add(op.Mul(op.Sub(lq, 1), ratio), lk), 1)
    distance = op.Cast(op.Mul(op.Sub(top, rows), step), to=F32)
    table = op.Cast(op.Concat(*sinusoids(op, d_model, distance), axis=-1), to=dtype)
    i, j = op.Range(0, lq, 1), op.Range(0, lk, 1)
    reversed_i = op.Mul(op.Sub(op.Sub(lq, 1), i), ratio)
    index = op.Add(op.Unsqueeze(reversed_i, [1]), op.Unsqueeze(j, [0]))
    return table, index
