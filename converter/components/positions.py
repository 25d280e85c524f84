"""Absolute positions added to the token embeddings: a learned table, or sines and cosines."""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.errors import ConfigError


class LearnedPositions(nn.Module):
    """A learned table read at position_ids + `offset` (OPT and BioGPT keep two rows first)."""

    def __init__(self, positions: int, dim: int, dtype: ir.DataType, offset: int = 0):
        super().__init__()
        self.weight = nn.Parameter([positions + offset, dim], dtype)
        self.offset = offset

    def forward(self, op, position_ids):
        rows = op.Add(position_ids, self.offset) if self.offset else position_ids
        return op.Gather(self.weight, rows, axis=0)


class SinusoidalPositions(nn.Module):
    """[sin | cos] of (position + `offset`) * `frequencies`, computed in the graph for any
    position; the row of position + offset == `zero_at` is zeros (XGLM's padding_idx)."""

    def __init__(self, frequencies: np.ndarray, dtype: ir.DataType, offset: int = 0, zero_at=None):
        super().__init__()
        self.frequencies = np.asarray(frequencies, dtype=np.float32)
        self.dtype, self.offset, self.zero_at = dtype, offset, zero_at

    def forward(self, op, position_ids):
        rows = op.Add(position_ids, self.offset) if self.offset else position_ids
        frequencies = op.Constant(value=ir.tensor(self.frequencies))
        angles = op.Mul(op.Unsqueeze(op.Cast(rows, to=ir.DataType.FLOAT), [-1]), frequencies)
        table = op.Concat(op.Sin(angles), op.Cos(angles), axis=-1)
        if self.zero_at is not None:
            table = op.Where(op.Unsqueeze(op.Equal(rows, self.zero_at), [-1]), 0.0, table)
        return table if self.dtype == ir.DataType.FLOAT else op.Cast(table, to=self.dtype)


def fairseq_frequencies(dim: int) -> np.ndarray:
    """tensor2tensor's exp(-i ln(10000) / (dim/2 - 1)), i < dim / 2, in float32: the sinusoids
    fairseq (XGLM, M2M-100, Speech2Text, Pegasus-X) lays out as [sin | cos]."""
    half = dim // 2
    if dim % 2 or half < 2:
        raise ConfigError(f"'d_model' = {dim}: fairseq's sinusoids need an even width >= 4")
    return np.exp(np.arange(half, dtype=np.float32) * np.float32(-math.log(10000) / (half - 1)))


def real_tokens(op, input_ids, pad: int):
    """[batch, sequence] int64: 1 where a token is not padding."""
    return op.Cast(op.Not(op.Equal(input_ids, pad)), to=ir.DataType.INT64)


def counted_positions(op, real, pad: int, start=None):
    """fairseq's positions: padding_idx + 1, + 2, ... (after `start` [1], the past length) where
    `real` [batch, n] is 1, padding_idx where it is 0."""
    counted = op.CumSum(real, 1)
    if start is not None:
        counted = op.Add(counted, start)
    return op.Add(op.Mul(counted, real), pad)
