"""Convolutional layers as transformers' image models compose them: a Conv2d with its
BatchNorm2d and activation (`ConvNorm`), and BatchNorm over the channels of token sequences.
The norms run in eval mode: the running statistics, as the checkpoint stores them."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components.activations import activation
from converter.components.conv2d import BatchNorm2d, Conv2d


class ConvNorm(nn.Module):
    """`convolution`, then `normalization` (a BatchNorm2d; none when `eps` is None) and the
    activation `act` (none when None). Subclasses rename the parts (`conv_name`, `norm_name`)."""

    conv_name, norm_name = "convolution", "normalization"

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel: int | tuple[int, int],
        dtype: ir.DataType,
        *,
        stride: int = 1,
        padding: int | tuple[int, int] = 0,
        groups: int = 1,
        bias: bool = False,
        dilation: int = 1,
        eps: float | None = 1e-5,
        act: str | None = None,
    ):
        super().__init__()
        conv = Conv2d(
            in_channels,
            out_channels,
            kernel,
            dtype,
            stride=stride,
            padding=padding,
            groups=groups,
            bias=bias,
            dilation=dilation,
        )
        setattr(self, self.conv_name, conv)
        norm = None if eps is None else BatchNorm2d(out_channels, dtype, eps)
        setattr(self, self.norm_name, norm)
        self.act = act

    def forward(self, op, x):
        x = getattr(self, self.conv_name)(op, x)
        norm = getattr(self, self.norm_name)
        if norm is not None:
            x = norm(op, x)
        return x if self.act is None else activation(op, self.act, x)


class TokenBatchNorm(BatchNorm2d):
    """BatchNorm over the last axis of [..., channels] (LeViT's BatchNorm1d on flattened tokens)."""

    def forward(self, op, x):
        channels = op.Constant(value_ints=[-1, self.weight.shape[0]])
        flat = super().forward(op, op.Reshape(x, channels))
        return op.Reshape(flat, op.Shape(x))
