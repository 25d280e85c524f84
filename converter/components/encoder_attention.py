"""Bidirectional attention over a padding mask: the op itself, in two kernels with one contract.

`StandardEncoderAttention` is opset-23 Attention over [batch, sequence, hidden] q/k/v with a
boolean key mask (portable); `FusedEncoderAttention` is onnxruntime's com.microsoft
MultiHeadAttention with the padding mask as key_padding_mask. Both take an optional additive
bias [batch or 1, heads, sequence, sequence] (relative positions). The model picks one per EP.
Without a mask (images of one size) every key is attended; `causal` (CLIP's text tower) also
hides later keys; `queries` is the query count when it is not the keys' (a pooling probe's 1,
a perceiver's latents).
`BlockAttention` is the same choice for a sequence of several images' patches (or windows)
where a patch attends only the keys a boolean [sequence, sequence] mask allows.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from converter.dtypes import NUMPY_OF
from converter.execution_providers import ENCODER_MHA

MS_DOMAIN = "com.microsoft"


class StandardEncoderAttention:
    def __init__(self, op, attention_mask, dtype: ir.DataType, causal=False, queries=None):
        self.dtype, self.additive, self.keep = dtype, None, None
        if attention_mask is None:
            return
        keep = op.Unsqueeze(op.Cast(attention_mask, to=ir.DataType.BOOL), [1, 2])
        length = op.Shape(attention_mask, start=1, end=2)
        if queries != 1:
            # onnxruntime wants the query dimension spelled out: [batch, 1, queries, keys]
            # (a known count as one constant: a Concat of constants reads as packed weights)
            shape = (
                op.Concat([1, 1], length, [1], axis=0) if queries is None else [1, 1, queries, 1]
            )
            keep = op.Expand(keep, shape)
        if causal:
            positions = op.Range(0, op.Squeeze(length, [0]), 1)
            earlier = op.LessOrEqual(op.Unsqueeze(positions, [0]), op.Unsqueeze(positions, [1]))
            keep = op.And(keep, earlier)
        self.keep = keep

    def _additive(self, op):
        if self.additive is None:
            self.additive = additive_mask(op, self.keep, self.dtype)
        return self.additive

    def __call__(self, op, q, k, v, heads: int, scale: float, bias=None):
        if self.keep is None:
            mask = bias
        else:
            mask = self.keep if bias is None else op.Add(bias, self._additive(op))
        return op.Attention(q, k, v, mask, q_num_heads=heads, kv_num_heads=heads, scale=scale)


class FusedEncoderAttention:
    def __init__(self, op, attention_mask, dtype: ir.DataType, causal=False, queries=None):
        self.key_padding_mask = (
            None if attention_mask is None else op.Cast(attention_mask, to=ir.DataType.INT32)
        )
        self.causal = {"unidirectional": 1} if causal else {}

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
            **self.causal,
            _domain=MS_DOMAIN,
            _version=1,
        )


def additive_mask(op, keep, dtype: ir.DataType):
    """A boolean mask as 0 / the dtype's lowest value, to add to a bias."""
    numpy_type = NUMPY_OF[dtype]
    zero = ir.tensor(np.zeros([], numpy_type))
    low = ir.tensor(np.array(np.finfo(numpy_type).min, numpy_type))
    return op.Where(keep, op.Constant(value=zero), op.Constant(value=low))


def encoder_attention(op, ep, attention_mask, dtype: ir.DataType, *, causal=False, queries=None):
    """The EP's kernel for every layer of one encoder graph (`attention_mask` None: no padding)."""
    if causal and attention_mask is None:
        raise ValueError("a causal encoder kernel reads its length from the attention mask")
    kernel = FusedEncoderAttention if ep.has(ENCODER_MHA) else StandardEncoderAttention
    return kernel(op, attention_mask, dtype, causal, queries)


class BlockAttention:
    """Attention over one packed sequence [1, sequence, hidden] where each query sees only
    the keys `keep` [sequence, sequence] (bool) allows: its own image's, frame's or window's.
    MultiHeadAttention with the mask as an additive bias where the EP has it (and keys and
    values have a head per query head), else opset-23 Attention with the boolean mask."""

    def __init__(self, op, ep, keep, dtype: ir.DataType):
        self.keep, self.dtype, self.bias = keep, dtype, None
        self.has_fused = ep.has(ENCODER_MHA)

    def fused(self, heads: int, kv_heads: int) -> bool:
        return self.has_fused and kv_heads == heads

    def __call__(self, op, q, k, v, heads: int, scale: float, kv_heads: int | None = None):
        kv_heads = kv_heads or heads
        if not self.fused(heads, kv_heads):
            return op.Attention(
                q, k, v, self.keep, q_num_heads=heads, kv_num_heads=kv_heads, scale=scale
            )
        if self.bias is None:
            self.bias = op.Unsqueeze(additive_mask(op, self.keep, self.dtype), [0, 1])
        out = FusedEncoderAttention(op, None, self.dtype)(op, q, k, v, heads, scale, self.bias)
        # a contrib op's output gets no inferred shape: give it q's, as Attention's has, so
        # the passes after it see the same graph on every EP
        out.shape, out.type = q.shape, q.type
        return out
