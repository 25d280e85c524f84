"""Image building blocks in NCHW, with torch's parameter names: Conv2d, BatchNorm2d (inference
statistics), GroupNorm, a LayerNorm over the channels of an NCHW map, and parameter-less
placeholders that keep torch's Sequential indices (`classifier.1.weight`)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components.norms import LayerNorm


class Conv2d(nn.Module):
    """torch.nn.Conv2d: `weight` [out, in / groups, kh, kw], `padding` on both sides of each
    axis (one int, or (height, width)), or (`same`) TensorFlow's "SAME" padding for whatever
    size comes: the output ceil(size / stride), the odd pixel of padding at the bottom and right
    (onnx's SAME_UPPER)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel: tuple[int, int] | int,
        dtype: ir.DataType,
        stride: tuple[int, int] | int = 1,
        padding: tuple[int, int] | int = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: int = 1,
        same: bool = False,
    ):
        super().__init__()
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
        self.weight = nn.Parameter([out_channels, in_channels // groups, kh, kw], dtype)
        self.bias = nn.Parameter([out_channels], dtype) if bias else None
        self.strides = [stride, stride] if isinstance(stride, int) else list(stride)
        ph, pw = (padding, padding) if isinstance(padding, int) else padding
        self.kernel, self.pads, self.groups = [kh, kw], [ph, pw, ph, pw], groups
        self.dilations, self.same = [dilation, dilation], same

    def forward(self, op, x):
        inputs = (x, self.weight) if self.bias is None else (x, self.weight, self.bias)
        padding = {"auto_pad": "SAME_UPPER"} if self.same else {"pads": self.pads}
        return op.Conv(
            *inputs,
            kernel_shape=self.kernel,
            strides=self.strides,
            dilations=self.dilations,
            group=self.groups,
            **padding,
        )


class BatchNorm2d(nn.Module):
    """torch.nn.BatchNorm2d in eval mode: the running statistics (onnxruntime folds it into the
    convolution before it)."""

    def __init__(self, channels: int, dtype: ir.DataType, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter([channels], dtype)
        self.bias = nn.Parameter([channels], dtype)
        self.running_mean = nn.Parameter([channels], dtype)
        self.running_var = nn.Parameter([channels], dtype)
        self.eps = eps

    def forward(self, op, x):
        return op.BatchNormalization(
            x, self.weight, self.bias, self.running_mean, self.running_var, epsilon=self.eps
        )


class ChannelsFirstLayerNorm(LayerNorm):
    """LayerNorm over the channels of an NCHW map (ConvNeXt's `channels_first` format)."""

    def forward(self, op, x):
        channels_last = op.Transpose(x, perm=[0, 2, 3, 1])
        return op.Transpose(super().forward(op, channels_last), perm=[0, 3, 1, 2])


class Placeholder(nn.Module):
    """A parameter-less step of a torch Sequential (Flatten, ReLU, ...): it holds the index so
    the next step's parameters keep their names; `fn` is what it computes."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, op, x):
        return self.fn(op, x)


class GroupNorm(nn.Module):
    """torch.nn.GroupNorm over [batch, channels, ...]: `groups` groups of channels normalized
    together (one group: each image over all its channels and positions), then each channel's
    `weight` and `bias`."""

    def __init__(self, groups: int, channels: int, eps: float, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([channels], dtype)
        self.bias = nn.Parameter([channels], dtype)
        self.groups, self.eps = groups, eps

    def forward(self, op, x):
        return op.GroupNormalization(
            x, self.weight, self.bias, num_groups=self.groups, epsilon=self.eps
        )
