"""Dense projections in the two checkpoint layouts Hugging Face uses."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn


class Linear(nn.Module):
    """torch.nn.Linear: `weight` is [out, in]; a save-time pass stores it pre-transposed."""

    def __init__(self, in_features: int, out_features: int, bias: bool, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([out_features, in_features], dtype)
        self.bias = nn.Parameter([out_features], dtype) if bias else None

    def forward(self, op, x):
        y = op.MatMul(x, op.Transpose(self.weight, perm=[1, 0]))
        return y if self.bias is None else op.Add(y, self.bias)


class Conv1D(nn.Module):
    """GPT-2's Conv1D: `weight` is already [in, out]."""

    def __init__(self, in_features: int, out_features: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([in_features, out_features], dtype)
        self.bias = nn.Parameter([out_features], dtype)

    def forward(self, op, x):
        return op.Add(op.MatMul(x, self.weight), self.bias)
