"""YOSO's attention as transformers runs it at inference (`use_expectation`): in place of
sampled LSH collisions, their expected rate. Queries and keys are normalized to unit length
per head; each query's output is the sum of the values weighted by (1 - arccos(q . k) / pi)
** hash_code_len, normalized to unit length again. No softmax, no scale.

transformers 5.24 turns the 0/1 padding mask into int(1 + mask / 10000), all ones: every key
is weighted, padding included, and so it is here (the mask reaches only YOSO's value
convolution). `ExpectedCollisionAttention` is called like the encoder kernels of
encoder_attention.py (q, k, v [batch, sequence, hidden] in, the same out) and is handed to
every layer in their place; `value_mask` is the padding mask for the values' convolution.
"""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir

from converter.components.seq2seq_attention import heads_first, heads_last
from converter.dtypes import NUMPY_OF

NORM_EPS = 1e-12  # torch.nn.functional.normalize's floor on the norm


class ExpectedCollisionAttention:
    def __init__(self, op, attention_mask, dtype: ir.DataType, head_dim: int, hash_code_len: int):
        self.dtype, self.head_dim, self.hash_code_len = dtype, head_dim, hash_code_len
        # [batch, 1, sequence, 1]: scales each head's values per token
        self.value_mask = op.Unsqueeze(op.Cast(attention_mask, to=dtype), [1, 3])

    def _const(self, op, value: float):
        return op.Constant(value=ir.tensor(np.asarray(value, NUMPY_OF[self.dtype])))

    def _unit(self, op, x):
        norm = op.ReduceL2(x, [-1], keepdims=1)
        return op.Div(x, op.Max(norm, self._const(op, NORM_EPS)))

    def __call__(self, op, q, k, v, heads: int, scale: float, bias=None):
        head_dim = self.head_dim
        q = self._unit(op, heads_first(op, q, heads, head_dim))
        k = self._unit(op, heads_first(op, k, heads, head_dim))
        cosines = op.MatMul(q, op.Transpose(k, perm=[0, 1, 3, 2]))
        # unit vectors' dot products may round past +-1, where arccos has no value
        cosines = op.Clip(cosines, self._const(op, -1.0), self._const(op, 1.0))
        collision = op.Sub(self._const(op, 1.0), op.Div(op.Acos(cosines), self._const(op, math.pi)))
        weights = op.Pow(collision, self._const(op, float(self.hash_code_len)))
        out = op.MatMul(weights, heads_first(op, v, heads, head_dim))
        return heads_last(op, self._unit(op, out))
