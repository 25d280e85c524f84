"""AnyRes, LLaVA-NeXT's tiling of images of any size, computed in the graph from each image's
(height, width): the processor resizes an image to the best-fitting resolution of
`image_grid_pinpoints` (the most of the image's pixels kept, then the fewest wasted), cuts it
into a grid of tower-sized crops and puts a base crop of the whole image first, padding every
image's crops to the batch's most. The tower's features of an image are its base crop's tokens,
then the grid's tokens as one map, its padding bands cut off (back to the image's aspect), each
row followed by the newline vector. `max_crops` (LLaVA-OneVision's anyres_max_N): a map holding
more than N crops' worth of tokens (by a factor over 1.1) is first shrunk bilinearly to about N.

The arithmetic is transformers' (select_best_resolution, unpad_image), in float64 as Python
computes it; the shrinking is torch's bilinear interpolation (half-pixel, no antialias) written
as four weighted gathers per token."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.errors import ConfigError

DOUBLE, FLOAT, INT64 = ir.DataType.DOUBLE, ir.DataType.FLOAT, ir.DataType.INT64
SHRINK_ABOVE = 1.1  # the ratio to N crops' worth of tokens past which a map is shrunk
ROUNDING = 5e-8  # int(round(x, 7)): x up to 5e-8 below an integer counts as that integer
MAX_PINPOINTS = 1024


def read_pinpoints(value, crop: int) -> tuple[tuple[int, int], ...]:
    """`image_grid_pinpoints`: (height, width) resolutions, each a grid of whole crops."""
    if not isinstance(value, list) or not 0 < len(value) <= MAX_PINPOINTS:
        raise ConfigError(
            f"'image_grid_pinpoints' must be a list of 1 to {MAX_PINPOINTS} [height, width] pairs"
        )
    for pair in value:
        sane = isinstance(pair, list | tuple) and len(pair) == 2
        if not sane or not all(type(v) is int and 0 < v <= 1 << 16 for v in pair):
            raise ConfigError(f"'image_grid_pinpoints': {pair!r} is not a [height, width] pair")
        if pair[0] % crop or pair[1] % crop:
            raise ConfigError(
                f"'image_grid_pinpoints': {list(pair)} is not a grid of whole crops of the "
                f"tower's image_size {crop}"
            )
    return tuple((h, w) for h, w in value)


class Newline(nn.Module):
    """The vector closing each row of a map (`image_newline`), read inside this module so it
    binds by the module's name."""

    def __init__(self, size: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([size], dtype)

    def forward(self, op):
        return self.weight


def _const(op, values, dtype) -> ir.Value:
    return op.Constant(value=ir.tensor(np.array(values, dtype)))


def segment_of(op, position, lengths) -> ir.Value:
    """For each of `position` [n], the index of the run of `lengths` [runs] laid end to end
    that holds it."""
    later = op.GreaterOrEqual(op.Unsqueeze(position, [1]), op.CumSum(lengths, [0]))
    return op.ReduceSum(op.Cast(later, to=INT64), [1], keepdims=0)


class AnyRes:
    """AnyRes over crops of `crop` pixels, `side` x `side` tokens each."""

    def __init__(self, pinpoints, crop: int, side: int, max_crops: int | None = None):
        self.pinpoints, self.crop, self.side, self.max_crops = pinpoints, crop, side, max_crops
        self.tokens = side * side  # of one crop

    def grids(self, op, sizes) -> ir.Value:
        """[images, 2]: each image's grid of crops (rows, columns), from its (height, width)."""
        height, width = op.Split(op.Cast(sizes, to=DOUBLE), axis=1, num_outputs=2, _outputs=2)
        heights = _const(op, [h for h, _ in self.pinpoints], np.float64)
        widths = _const(op, [w for _, w in self.pinpoints], np.float64)
        scale = op.Min(op.Div(widths, width), op.Div(heights, height))  # [images, pinpoints]
        kept = op.Mul(op.Floor(op.Mul(width, scale)), op.Floor(op.Mul(height, scale)))
        kept = op.Min(kept, op.Mul(width, height))
        wasted = op.Sub(op.Mul(heights, widths), kept)
        most = op.Equal(kept, op.ReduceMax(kept, [1], keepdims=1))
        unfit = _const(op, np.inf, np.float64)
        choice = op.ArgMin(op.Where(most, wasted, unfit), axis=1, keepdims=0)  # the first
        grid = [[h // self.crop, w // self.crop] for h, w in self.pinpoints]
        return op.Gather(_const(op, grid, np.int64), choice, axis=0)

    def crops(self, op, pixels, grids, tiled=None) -> tuple[ir.Value, ir.Value]:
        """The real crops of pixel_values [images, slots, channels, side, side], in order
        ([crops, channels, side, side]), and each image's count [images]. `tiled` [images]
        (bool; None: all): an image not tiled has its base crop only."""
        counts = op.Add(op.ReduceProd(grids, [1], keepdims=0), 1)
        if tiled is not None:
            counts = op.Where(tiled, counts, 1)
        slots = op.Squeeze(op.Shape(pixels, start=1, end=2), [0])
        real = op.Less(op.Range(0, slots, 1), op.Unsqueeze(counts, [1]))  # [images, slots]
        index = op.Squeeze(op.NonZero(op.Reshape(real, [-1])), [0])
        flat = op.Reshape(pixels, op.Concat([-1], op.Shape(pixels, start=2), axis=0))
        return op.Gather(flat, index, axis=0), counts

    def pack(self, op, features, newline, sizes, grids, counts, tiled=None) -> ir.Value:
        """[image tokens, hidden] from the crops' features [crops, tokens, hidden] and the
        newline vector [hidden]; an image not `tiled` is its base crop's tokens and one
        newline. Every output token, of every image at once, is a table row (the crops'
        tokens, then the newline) or, when shrinking, a weighted sum of four: its image found
        from the images' cumulative lengths, its place from its offset there."""
        hidden = op.Shape(features, start=2, end=3)
        table = op.Reshape(features, op.Concat([-1], hidden, axis=0))
        table = op.Concat(table, op.Reshape(newline, [1, -1]), axis=0)
        newline_row = op.Sub(op.Shape(table, start=0, end=1), 1)
        grid_rows, grid_columns = (op.Gather(grids, i, axis=1) for i in (0, 1))
        first_crop = op.CumSum(counts, [0], exclusive=1)
        rows, columns, top, left = self.unpadded(op, sizes, grid_rows, grid_columns)
        out_rows, out_columns = self.shrunk(op, rows, columns)
        if tiled is not None:  # a map of one row of no tokens: the newline alone
            out_rows, out_columns = op.Where(tiled, out_rows, 1), op.Where(tiled, out_columns, 0)
        lengths = op.Add(op.Mul(out_rows, op.Add(out_columns, 1)), self.tokens)
        ends = op.CumSum(lengths, [0])
        position = op.Range(0, op.ReduceSum(lengths, keepdims=0), 1)  # [image tokens]
        image = segment_of(op, position, lengths)

        def each(value):  # the value of each token's image
            return op.Gather(value, image, axis=0)

        offset = op.Sub(position, each(op.Sub(ends, lengths)))
        base = op.Less(offset, self.tokens)
        in_map = op.Max(op.Sub(offset, self.tokens), 0)
        width = op.Add(each(out_columns), 1)
        row, column = op.Div(in_map, width), op.Mod(in_map, width)
        at_newline = op.Equal(column, each(out_columns))
        ys = self.sample(op, row, each(rows), each(out_rows))
        xs = self.sample(op, column, each(columns), each(out_columns))
        crop_base = op.Add(each(first_crop), 1)
        base_source = op.Add(op.Mul(each(first_crop), self.tokens), offset)
        direct = op.Where(base, base_source, newline_row)
        special = op.Or(base, at_newline)
        corners = [(y, x, None if wy is None else op.Mul(wy, wx)) for y, wy in ys for x, wx in xs]
        total = None
        for y, x, weight in corners:
            source = self.source(
                op, op.Add(y, each(top)), op.Add(x, each(left)), crop_base, each(grid_columns)
            )
            term = op.Gather(table, op.Where(special, direct, source), axis=0)
            if weight is not None:  # the special rows once, in the first corner
                weight = op.Where(special, 1.0 if total is None else 0.0, weight)
                term = op.Mul(term, op.Unsqueeze(op.CastLike(weight, table), [1]))
            total = term if total is None else op.Add(total, term)
        return total

    def source(self, op, y, x, crop_base, grid_columns) -> ir.Value:
        """The table row of map cell (y, x) of an image's padded map."""
        side = self.side
        crop = op.Add(crop_base, op.Add(op.Mul(op.Div(y, side), grid_columns), op.Div(x, side)))
        token = op.Add(op.Mul(op.Mod(y, side), side), op.Mod(x, side))
        return op.Add(op.Mul(crop, self.tokens), token)

    def unpadded(self, op, sizes, grid_rows, grid_columns):
        """Each image's map without its padding bands: rows, columns, and the first row and
        column kept of the padded map."""
        height, width = (op.Cast(op.Gather(sizes, i, axis=1), to=DOUBLE) for i in (0, 1))
        map_rows, map_columns = op.Mul(grid_rows, self.side), op.Mul(grid_columns, self.side)
        rows_d, columns_d = op.Cast(map_rows, to=DOUBLE), op.Cast(map_columns, to=DOUBLE)
        wider = op.Greater(op.Div(width, height), op.Div(columns_d, rows_d))

        def band(length, scaled):  # (map length - the image's scaled length) // 2
            scaled = op.Cast(op.Floor(op.Add(scaled, _const(op, ROUNDING, np.float64))), to=INT64)
            return op.Div(op.Sub(length, scaled), 2)

        top = op.Where(wider, band(map_rows, op.Mul(height, op.Div(columns_d, width))), 0)
        left = op.Where(wider, 0, band(map_columns, op.Mul(width, op.Div(rows_d, height))))
        rows = op.Sub(map_rows, op.Mul(top, 2))
        columns = op.Sub(map_columns, op.Mul(left, 2))
        return rows, columns, top, left

    def shrunk(self, op, rows, columns):
        """The map's size once shrunk to about `max_crops` crops' worth of tokens."""
        if self.max_crops is None:
            return rows, columns
        rows_d, columns_d = op.Cast(rows, to=DOUBLE), op.Cast(columns, to=DOUBLE)
        most = _const(op, self.max_crops * self.tokens, np.float64)
        ratio = op.Sqrt(op.Div(op.Mul(rows_d, columns_d), most))
        shrink = op.Greater(ratio, _const(op, SHRINK_ABOVE, np.float64))

        def size(length, length_d):
            return op.Where(shrink, op.Cast(op.Floor(op.Div(length_d, ratio)), to=INT64), length)

        return size(rows, rows_d), size(columns, columns_d)

    def sample(self, op, out, size, out_size) -> list[tuple[ir.Value, ir.Value | None]]:
        """The source cells along one axis of output cell `out` and their weights (float32,
        as torch computes them): one cell without shrinking, two with."""
        if self.max_crops is None:
            return [(out, None)]
        scale = op.Div(op.Cast(size, to=FLOAT), op.Cast(out_size, to=FLOAT))
        place = op.Sub(op.Mul(op.Add(op.Cast(out, to=FLOAT), 0.5), scale), 0.5)
        place = op.Max(place, 0.0)
        last = op.Sub(size, 1)
        low = op.Min(op.Cast(op.Floor(place), to=INT64), last)  # clamped past the newline
        high = op.Min(op.Add(low, 1), last)
        far = op.Sub(place, op.Cast(low, to=FLOAT))
        return [(low, op.Sub(1.0, far)), (high, far)]
