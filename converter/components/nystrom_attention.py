"""Nyström self-attention (Nyströmformer): softmax attention approximated through landmarks.

The sequence is cut into `landmarks` segments of equal length; the means of each segment's
queries and keys are the landmarks. With kernel_1 = softmax(Q Kl^T), kernel_2 =
softmax(Ql Kl^T) and kernel_3 = softmax(Ql K^T + key mask), the output is
kernel_1 pinv(kernel_2) (kernel_3 V), pinv by six steps of the iterative Moore-Penrose
inverse. Only kernel_3 sees the padding mask, as keys; padded queries and keys still enter
the landmark means, as in transformers.

`NystromAttention` is called like the encoder kernels of encoder_attention.py (q, k, v
[batch, sequence, hidden] in, the same out) and is handed to every layer in their place.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from converter.components.encoder_attention import additive_mask
from converter.components.seq2seq_attention import heads_first, heads_last
from converter.dtypes import NUMPY_OF

PINV_STEPS = 6  # transformers' iterative_inv default, which its attention uses


class NystromAttention:
    """`segment` is the tokens per landmark, the configured sequence length over `landmarks`
    (segment_means_seq_len / num_landmarks): a sequence of any other length fails the reshape
    into segments, where transformers would mix rows or fail."""

    def __init__(self, op, attention_mask, dtype: ir.DataType, head_dim: int, landmarks, segment):
        self.dtype, self.head_dim = dtype, head_dim
        self.landmarks, self.segment = landmarks, segment
        keep = op.Unsqueeze(op.Cast(attention_mask, to=ir.DataType.BOOL), [1, 2])
        self.key_bias = additive_mask(op, keep, dtype)  # [batch, 1, 1, keys]
        self.batch = op.Shape(attention_mask, start=0, end=1)

    def _const(self, op, array):
        return op.Constant(value=ir.tensor(np.asarray(array, NUMPY_OF[self.dtype])))

    def _means(self, op, x, heads: int, head_dim: int):
        """[batch, heads, sequence, head_dim] -> each segment's mean [batch, heads, landmarks,
        head_dim]."""
        shape = op.Concat(self.batch, [heads, self.landmarks, self.segment, head_dim], axis=0)
        return op.ReduceMean(op.Reshape(x, shape), [3], keepdims=0)

    def __call__(self, op, q, k, v, heads: int, scale: float, bias=None):
        head_dim = self.head_dim
        # transformers divides q and k each by head_dim ** (1 / 4) (`scale` is their product)
        root = self._const(op, np.sqrt(np.sqrt(head_dim)))
        q = op.Div(heads_first(op, q, heads, head_dim), root)
        k = op.Div(heads_first(op, k, heads, head_dim), root)
        v = heads_first(op, v, heads, head_dim)
        q_marks, k_marks = self._means(op, q, heads, head_dim), self._means(op, k, heads, head_dim)
        k_marks_t = op.Transpose(k_marks, perm=[0, 1, 3, 2])
        kernel_1 = op.Softmax(op.MatMul(q, k_marks_t), axis=-1)
        kernel_2 = op.Softmax(op.MatMul(q_marks, k_marks_t), axis=-1)
        scores = op.MatMul(q_marks, op.Transpose(k, perm=[0, 1, 3, 2]))
        kernel_3 = op.Softmax(op.Add(scores, self.key_bias), axis=-1)
        probs = op.MatMul(kernel_1, self._pinv(op, kernel_2))
        return heads_last(op, op.MatMul(probs, op.MatMul(kernel_3, v)))

    def _pinv(self, op, kernel):
        """transformers' iterative inverse with its "original" start: Z = K^T / the largest
        column sum of K over the whole batch (one scalar, so rows of a batch meet here), then
        Z <- 1/4 Z (13 I - KZ (15 I - KZ (7 I - KZ)))."""
        eye = np.eye(self.landmarks)
        column_sums = op.ReduceSum(kernel, [-2], keepdims=0)
        start = op.Div(self._const(op, 1.0), op.ReduceMax(column_sums, keepdims=0))
        z = op.Mul(start, op.Transpose(kernel, perm=[0, 1, 3, 2]))
        for _ in range(PINV_STEPS):
            kz = op.MatMul(kernel, z)
            inner = op.MatMul(kz, op.Sub(self._const(op, 7 * eye), kz))
            outer = op.MatMul(kz, op.Sub(self._const(op, 15 * eye), inner))
            step = op.Sub(self._const(op, 13 * eye), outer)
            z = op.MatMul(op.Mul(self._const(op, 0.25), z), step)
        return z
