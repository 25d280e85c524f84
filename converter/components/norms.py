"""RMSNorm and LayerNorm as the standard opset-23 normalization ops."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.dtypes import NUMPY_OF


def _constant(op, value: float, size: int, dtype: ir.DataType):
    return op.Constant(value=ir.tensor(np.full([size], value, dtype=dtype.numpy())))


class RMSNorm(nn.Module):
    """`offset` = 1.0 for checkpoints that store the scale as w - 1 (Gemma); without `affine`
    there is no weight: every channel is scaled by `scale` (1 unless the family says)."""

    def __init__(
        self,
        size: int,
        eps: float,
        dtype: ir.DataType,
        offset: float = 0.0,
        affine: bool = True,
        scale: float = 1.0,
    ):
        super().__init__()
        self.weight = nn.Parameter([size], dtype) if affine else None
        self.eps, self.offset, self.size, self.dtype, self.scale = eps, offset, size, dtype, scale

    def forward(self, op, x):
        if self.weight is None:
            scale = _constant(op, self.scale, self.size, self.dtype)
        else:
            scale = self.weight if self.offset == 0.0 else op.Add(self.weight, self.offset)
        return op.RMSNormalization(x, scale, axis=-1, epsilon=self.eps, stash_type=1)


class LayerNorm(nn.Module):
    """`bias` False: a scale only (Cohere, MPT); `offset` = 1.0 for scales stored as w - 1
    (Nemotron); without `affine` neither weight nor bias (OLMo)."""

    def __init__(
        self,
        size: int,
        eps: float,
        dtype: ir.DataType,
        bias: bool = True,
        offset: float = 0.0,
        affine: bool = True,
    ):
        super().__init__()
        self.weight = nn.Parameter([size], dtype) if affine else None
        self.bias = nn.Parameter([size], dtype) if bias and affine else None
        self.eps, self.offset, self.size, self.dtype = eps, offset, size, dtype

    def forward(self, op, x):
        if self.weight is None:
            scale = _constant(op, 1.0, self.size, self.dtype)
        else:
            scale = self.weight if self.offset == 0.0 else op.Add(self.weight, self.offset)
        # no bias: no input at all (onnxruntime 1.32 crashes on an empty trailing one)
        inputs = (x, scale) if self.bias is None else (x, scale, self.bias)
        return op.LayerNormalization(*inputs, axis=-1, epsilon=self.eps)


class HeadwiseLayerNorm(nn.Module):
    """LayerNorm over each head of x [batch, sequence, heads, head_dim], each head with its own
    scale and no bias; a subclass stores the scales and gives them as `scale(op)` [heads,
    head_dim] (StableLM's and Cohere's q/k norms)."""

    def __init__(self, head_dim: int, eps: float, dtype: ir.DataType):
        super().__init__()
        self.eps, self.ones = eps, np.ones(head_dim, NUMPY_OF[dtype])

    def scale(self, op):
        raise NotImplementedError

    def forward(self, op, x):
        ones = op.Constant(value=ir.tensor(self.ones))
        normed = op.LayerNormalization(x, ones, axis=-1, epsilon=self.eps)
        return op.Mul(normed, self.scale(op))


def per_head(op, norm, x, head_dim: int):
    """`norm` over each `head_dim`-wide head of x [batch, sequence, heads * head_dim]."""
    return op.Reshape(norm(op, op.Reshape(x, [0, 0, -1, head_dim])), [0, 0, -1])


def make_norm(cfg, size: int, dtype: ir.DataType) -> RMSNorm | LayerNorm:
    """The norm a family uses, sized `size`."""
    if cfg.norm_type == "layer":
        bias = cfg.norm_bias
        return LayerNorm(
            size, cfg.norm_eps, dtype, bias=bias, offset=cfg.norm_offset, affine=cfg.norm_affine
        )
    return RMSNorm(size, cfg.norm_eps, dtype, offset=cfg.norm_offset, affine=cfg.norm_affine)
