"""RMSNorm and LayerNorm as the standard opset-23 normalization ops."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn


class RMSNorm(nn.Module):
    """`offset` = 1.0 for checkpoints that store the scale as w - 1 (Gemma); without a learned
    `weight`, every channel is scaled by `scale`."""

    def __init__(
        self,
        size: int,
        eps: float,
        dtype: ir.DataType,
        offset: float = 0.0,
        weight: bool = True,
        scale: float = 1.0,
    ):
        super().__init__()
        self.weight = nn.Parameter([size], dtype) if weight else None
        self.eps, self.offset = eps, offset
        self.fixed = None if weight else np.full([size], scale, dtype.numpy())

    def forward(self, op, x):
        if self.weight is None:
            scale = op.Constant(value=ir.tensor(self.fixed))
        elif self.offset:
            scale = op.Add(self.weight, self.offset)
        else:
            scale = self.weight
        return op.RMSNormalization(x, scale, axis=-1, epsilon=self.eps, stash_type=1)


class LayerNorm(nn.Module):
    def __init__(self, size: int, eps: float, dtype: ir.DataType, bias: bool = True):
        super().__init__()
        self.weight = nn.Parameter([size], dtype)
        self.bias = nn.Parameter([size], dtype) if bias else None
        self.eps = eps

    def forward(self, op, x):
        # no empty trailing input for a missing bias: onnxruntime's optimizer crashes on it
        scale_bias = (self.weight,) if self.bias is None else (self.weight, self.bias)
        return op.LayerNormalization(x, *scale_bias, axis=-1, epsilon=self.eps)


def make_norm(cfg, size: int, dtype: ir.DataType) -> RMSNorm | LayerNorm:
    """The norm a family uses, sized `size`."""
    if cfg.norm_type == "layer":
        return LayerNorm(size, cfg.norm_eps, dtype, bias=cfg.norm_bias)
    return RMSNorm(size, cfg.norm_eps, dtype, offset=cfg.norm_offset, weight=cfg.norm_weight)
