"""Activation functions by their Hugging Face names."""

from __future__ import annotations

from converter.errors import ConfigError


def activation(op, name: str, x):
    if name in ("silu", "swish"):
        return op.Mul(x, op.Sigmoid(x))
    if name in ("gelu_pytorch_tanh", "gelu_new", "gelu_fast"):
        return op.Gelu(x, approximate="tanh")
    if name == "gelu":
        return op.Gelu(x)
    if name == "relu":
        return op.Relu(x)
    if name == "relu2":  # squared ReLU
        relu = op.Relu(x)
        return op.Mul(relu, relu)
    raise ConfigError(f"'hidden_act' = {name!r} is not a supported activation")
