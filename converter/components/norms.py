"""RMSNorm and LayerNorm as the standard opset-23 normalization ops."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn


def _constant(op, value: float, size: int, dtype: ir.DataType):
    return op.Constant(value=ir.tensor(np.full([size], value, dtype=dtype.numpy())))


class RMSNorm(nn.Module):
    """`offset` = 1.0 for checkpoints that store the scale as w - 1 (Gemma); without `affine`
    there is no weight (a scale of ones)."""

    def __init__(
        self,
        size: int,
        eps: float,
        dtype: ir.DataType,
        offset: float = 0.0,
        affine: bool = True,
    ):
        super().__init__()
        self.weight = nn.Parameter([size], dtype) if affine else None
        self.eps, self.offset, self.size, self.dtype = eps, offset, size, dtype

    def forward(self, op, x):
        if self.weight is None:
            scale = _constant(op, 1.0, self.size, self.dtype)
        else:
            scale = self.weight if self.offset == 0.0 else op.Add(self.weight, self.offset)
        return op.RMSNormalization(x, scale, axis=-1, epsilon=self.eps, stash_type=1)


class LayerNorm(nn.Module):
    def __init__(self, size: int, eps: float, dtype: ir.DataType, affine: bool = True):
        super().__init__()
        self.weight = nn.Parameter([size], dtype) if affine else None
        self.bias = nn.Parameter([size], dtype) if affine else None
        self.eps, self.size, self.dtype = eps, size, dtype

    def forward(self, op, x):
        weight, bias = self.weight, self.bias
        if weight is None:
            weight = _constant(op, 1.0, self.size, self.dtype)
            bias = _constant(op, 0.0, self.size, self.dtype)
        return op.LayerNormalization(x, weight, bias, axis=-1, epsilon=self.eps)


def make_norm(cfg, size: int, dtype: ir.DataType) -> RMSNorm | LayerNorm:
    """The norm a family uses, sized `size`."""
    if cfg.norm_type == "layer":
        return LayerNorm(size, cfg.norm_eps, dtype, affine=cfg.norm_affine)
    return RMSNorm(size, cfg.norm_eps, dtype, offset=cfg.norm_offset, affine=cfg.norm_affine)
