"""Absolute positions added to the token embeddings: a learned table, or sines and cosines."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn


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
