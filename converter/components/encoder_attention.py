"""Bidirectional attention over a padding mask: the op itself, in two kernels with one contract.

`StandardEncoderAttention` is opset-23 Attention over [batch, sequence, hidden] q/k/v with a
boolean key mask (portable); `FusedEncoderAttention` is onnxruntime's com.microsoft
MultiHeadAttention with the padding mask as key_padding_mask. Both take an optional additive
bias [batch or 1, heads, sequence, sequence] (relative positions). Without a padding mask (image
encoders: every patch is real) every key is attended. The model picks one per EP.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from converter.dtypes import NUMPY_OF
from converter.execution_providers import ENCODER_MHA

MS_DOMAIN = "com.microsoft"


class StandardEncoderAttention:
    def __init__(self, op, attention_mask, dtype: ir.DataType):
        self.dtype, self.additive, self.keep = dtype, None, None
        if attention_mask is None:
            return
        keep = op.Unsqueeze(op.Cast(attention_mask, to=ir.DataType.BOOL), [1, 2])
        # onnxruntime wants the query dimension spelled out: [batch, 1, queries, keys]
        queries = op.Shape(attention_mask, start=1, end=2)
        self.keep = op.Expand(keep, op.Concat([1, 1], queries, [1], axis=0))

    def _additive(self, op):
        """The mask as 0 / the dtype's lowest value, to add to a bias."""
        if self.additive is None:
            numpy_type = NUMPY_OF[self.dtype]
            zero = ir.tensor(np.zeros([], numpy_type))
            low = ir.tensor(np.array(np.finfo(numpy_type).min, numpy_type))
            self.additive = op.Where(self.keep, op.Constant(value=zero), op.Constant(value=low))
        return self.additive

    def __call__(self, op, q, k, v, heads: int, scale: float, bias=None):
        if self.keep is None:
            mask = bias
        else:
            mask = self.keep if bias is None else op.Add(bias, self._additive(op))
        return op.Attention(q, k, v, mask, q_num_heads=heads, kv_num_heads=heads, scale=scale)


class FusedEncoderAttention:
    def __init__(self, op, attention_mask, dtype: ir.DataType):
        self.key_padding_mask = (
            None if attention_mask is None else op.Cast(attention_mask, to=ir.DataType.INT32)
        )

    def __call__(self, op, q, k, v, heads: int, scale: float, bias=None):
        return op.MultiHeadAttention(
            q,
            k,
            v,
            None,  # bias (the projections add their own)
            self.key_padding_mask,
            bias,  # attention_bias
            num_heads=heads,
            scale=scale,
            _domain=MS_DOMAIN,
            _version=1,
        )


def encoder_attention(op, ep, attention_mask, dtype: ir.DataType):
    """The EP's kernel for every layer of one encoder graph (`attention_mask` None: no padding)."""
    kernel = FusedEncoderAttention if ep.has(ENCODER_MHA) else StandardEncoderAttention
    return kernel(op, attention_mask, dtype)
