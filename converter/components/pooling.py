"""Padding and pooling of NCHW maps as transformers computes them: TensorFlow's "same" zeros
(from the map's size at run time), fixed zero pads on chosen sides, zeros up to whole patches,
global and adaptive average pooling."""

from __future__ import annotations


def pad(op, x, top: int, left: int, bottom: int, right: int, value: float = 0.0):
    """Zero (or `value`) rows and columns added around x [batch, channels, height, width]."""
    if not any((top, left, bottom, right)):
        return x
    pads = op.Constant(value_ints=[0, 0, top, left, 0, 0, bottom, right])
    return op.Pad(x, pads, op.CastLike(value, x))


def same_pad(op, x, kernel: tuple[int, int], stride: tuple[int, int], dilation: int = 1):
    """TensorFlow's "same" padding as zeros: the fewest that make the output ceil(size /
    stride) long, the odd one after. For a pool whose padding must be zeros (BiT's
    `DynamicPad2d` before its max pool); a Conv2d pads so itself (`same`)."""
    size = op.Shape(x, start=2, end=4)
    strides = op.Constant(value_ints=list(stride))
    reach = op.Constant(value_ints=[(k - 1) * dilation + 1 for k in kernel])
    steps = op.Div(op.Sub(op.Add(size, strides), 1), strides)  # ceil(size / stride)
    total = op.Max(op.Sub(op.Add(op.Mul(op.Sub(steps, 1), strides), reach), size), [0])
    before = op.Div(total, 2)
    after = op.Sub(total, before)
    zeros = op.Constant(value_ints=[0, 0])
    pads = op.Concat(zeros, before, zeros, after, axis=0)
    return op.Pad(x, pads, op.CastLike(0.0, x))


def global_mean(op, x, keep: bool = False):
    """The mean over height and width: [batch, channels] (or [batch, channels, 1, 1])."""
    return op.ReduceMean(x, [2, 3], keepdims=int(keep))


def adaptive_mean(op, x, out: tuple[int, int]):
    """torch's AdaptiveAvgPool2d(out) of x [batch, channels, height, width]: cell i of an axis of
    n positions averages positions floor(i * n / out) to ceil((i + 1) * n / out), from the
    map's size at run time (over rows, then over columns: the cells are rectangles)."""
    for axis, cells in ((2, out[0]), (3, out[1])):
        length = op.Shape(x, start=axis, end=axis + 1)
        parts = []
        for i in range(cells):
            start = op.Div(op.Mul(length, i), cells)
            end = op.Div(op.Add(op.Mul(length, i + 1), cells - 1), cells)
            part = op.Slice(x, start, end, op.Constant(value_ints=[axis]))
            parts.append(op.ReduceMean(part, [axis], keepdims=1))
        x = parts[0] if cells == 1 else op.Concat(*parts, axis=axis)
    return x


def pad_to_multiple(op, x, multiple: tuple[int, int]):
    """Zeros after the bottom and right edges of x [batch, channels, height, width] up to the
    next multiple of (height, width) `multiple` (Swin-style patch embeddings' maybe_pad)."""
    size = op.Shape(x, start=2, end=4)
    step = op.Constant(value_ints=list(multiple))
    after = op.Mod(op.Sub(step, op.Mod(size, step)), step)
    zeros = op.Constant(value_ints=[0, 0, 0, 0, 0, 0])
    return op.Pad(x, op.Concat(zeros, after, axis=0), op.CastLike(0.0, x))
