"""Pixel shuffle as Aya Vision, Command A Vision and InternVL downsample a square grid of
patch features: each `factor` x `factor` block of neighbouring patches becomes one token whose
channels are the block's patches concatenated (row offset, then column offset, then channel),
the tokens in row-major order of the blocks."""

from __future__ import annotations

import onnx_ir as ir


def pixel_shuffle(op, x: ir.Value, side: int, factor: int) -> ir.Value:
    """x [images, side * side, channels] -> [images, (side / factor)², factor² * channels]."""
    blocks = side // factor
    channels = op.Shape(x, start=2, end=3)
    grid = op.Concat([-1, blocks, factor, blocks, factor], channels, axis=0)
    # [images, block row, row offset, block column, column offset, channels]
    x = op.Transpose(op.Reshape(x, grid), perm=[0, 1, 3, 2, 4, 5])
    return op.Reshape(x, op.Concat([0, blocks * blocks], op.Mul(channels, factor**2), axis=0))
