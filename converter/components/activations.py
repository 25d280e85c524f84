"""Activation functions by their Hugging Face names; `XIELU` holds trained parameters."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.errors import ConfigError


def activation(op, name: str, x):
    if name in ("silu", "swish"):
        return op.Mul(x, op.Sigmoid(x))
    if name in ("gelu_pytorch_tanh", "gelu_new", "gelu_fast"):
        return op.Gelu(x, approximate="tanh")
    if name in ("gelu", "gelu_python"):  # gelu_python: the same erf form, in Python
        return op.Gelu(x)
    if name == "quick_gelu":  # CLIP's x * sigmoid(1.702 x)
        return op.Mul(x, op.Sigmoid(op.Mul(x, 1.702)))
    if name == "relu":
        return op.Relu(x)
    if name == "relu6":
        return op.Clip(x, op.CastLike(0.0, x), op.CastLike(6.0, x))
    if name == "hardswish":
        return op.HardSwish(x)
    if name == "tanh":
        return op.Tanh(x)
    if name == "relu2":
        positive = op.Relu(x)
        return op.Mul(positive, positive)
    raise ConfigError(f"'hidden_act' = {name!r} is not a supported activation")


class XIELU(nn.Module):
    """xIELU (arXiv 2411.13010): alpha_p x² + beta x for x > 0, else
    alpha_n (expm1(min(x, eps)) - x) + beta x, where alpha_p = softplus(`alpha_p`) and
    alpha_n = beta + softplus(`alpha_n`) are trained per layer."""

    def __init__(self, dtype: ir.DataType):
        super().__init__()
        self.alpha_p = nn.Parameter([1], dtype)
        self.alpha_n = nn.Parameter([1], dtype)
        self.beta = nn.Parameter([], dtype)
        self.eps = nn.Parameter([], dtype)

    def forward(self, op, x):
        alpha_p = op.Softplus(self.alpha_p)
        alpha_n = op.Add(self.beta, op.Softplus(self.alpha_n))
        linear = op.Mul(self.beta, x)
        positive = op.Add(op.Mul(op.Mul(alpha_p, x), x), linear)
        expm1 = op.Sub(op.Exp(op.Min(x, self.eps)), 1.0)
        negative = op.Add(op.Mul(op.Sub(expm1, x), alpha_n), linear)
        return op.Where(op.Greater(x, 0.0), positive, negative)


def trained_activation(name: str, dtype: ir.DataType) -> nn.Module | None:
    """The module of an activation with trained parameters (`act_fn` in checkpoints), if any."""
    return XIELU(dtype) if name == "xielu" else None
