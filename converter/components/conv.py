"""torch.nn.Conv1d over [batch, channels, time] as the ONNX Conv op, and its weight-normalised
form, whose checkpoints store a direction and a magnitude that binding folds into one weight."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.weights import Assembly


class Conv1d(nn.Module):
    """`weight` [out, in / groups, kernel]; `padding` zeros on both ends of the time axis."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel: int,
        dtype: ir.DataType,
        *,
        stride: int = 1,
        padding: int = 0,
        groups: int = 1,
        bias: bool = True,
    ):
        super().__init__()
        self.weight = nn.Parameter([out_channels, in_channels // groups, kernel], dtype)
        self.bias = nn.Parameter([out_channels], dtype) if bias else None
        self.kernel, self.stride, self.padding, self.groups = kernel, stride, padding, groups

    def forward(self, op, x):
        inputs = (x, self.weight) if self.bias is None else (x, self.weight, self.bias)
        return op.Conv(
            *inputs,
            kernel_shape=[self.kernel],
            strides=[self.stride],
            pads=[self.padding, self.padding],
            group=self.groups,
        )


# the names torch gives a weight-normalised `weight`'s magnitude and direction: the
# parametrization API's (transformers 5 saves these), then the older weight_norm hook's
WEIGHT_NORM_NAMES = (
    ("parametrizations.weight.original0", "parametrizations.weight.original1"),
    ("weight_g", "weight_v"),
)


class WeightNormConv1d(Conv1d):
    """A Conv1d under torch's weight_norm(dim=`dim`): weight = g * v / ||v||, the norm taken
    over every axis but `dim`. `names` are the checkpoint's (g, v) suffixes, one pair of
    WEIGHT_NORM_NAMES."""

    def __init__(self, *args, names: tuple[str, str], dim: int = 2, **kwargs):
        super().__init__(*args, **kwargs)
        self.names, self.dim = names, dim

    def assemblies(self) -> dict[str, Assembly]:
        name, shape = self.weight.name, tuple(self.weight.shape.dims)
        stem = name.removesuffix("weight")
        g_shape = tuple(size if axis == self.dim else 1 for axis, size in enumerate(shape))
        parts = ((stem + self.names[0], g_shape), (stem + self.names[1], shape))
        axes = tuple(axis for axis in range(len(shape)) if axis != self.dim)

        def fold(arrays: list[np.ndarray]) -> np.ndarray:
            g, v = (a.astype(np.float32) for a in arrays)
            return v * (g / np.sqrt(np.sum(v * v, axis=axes, keepdims=True)))

        return {name: Assembly(parts, fold)}


def weight_norm_names(tensors: frozenset[str], conv: str) -> tuple[str, str] | None:
    """Which WEIGHT_NORM_NAMES the checkpoint uses for the conv whose path ends with `conv`
    (None: it stores a plain weight)."""
    for g, v in WEIGHT_NORM_NAMES:
        if any(t.endswith(f"{conv}.{g}") for t in tensors):
            return g, v
    return None
