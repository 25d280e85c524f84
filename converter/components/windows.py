"""Swin's shifted windows on a [batch, rows * columns, channels] feature map of a known size:
pad to whole windows, roll by -shift, cut into [batch * windows, size * size, channels]; the
inverse; the shifted-window mask and the relative-position index, computed when the graph is
built (the image size is fixed)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Windows:
    rows: int
    columns: int
    size: int  # window side
    shift: int  # cyclic shift (0: plain windows, no mask)

    @property
    def padded(self) -> tuple[int, int]:
        """The map padded at the bottom and right to whole windows."""
        pad = lambda n: n + (self.size - n % self.size) % self.size  # noqa: E731
        return pad(self.rows), pad(self.columns)

    @property
    def grid(self) -> tuple[int, int]:
        rows, columns = self.padded
        return rows // self.size, columns // self.size

    @property
    def count(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def tokens(self) -> int:
        return self.size * self.size

    def mask(self, fill: float) -> np.ndarray | None:
        """[windows, 1, tokens, tokens]: 0 between tokens of the same region of the shifted map,
        `fill` between regions the roll brought together; None without a shift."""
        if self.shift == 0:
            return None
        rows, columns = self.padded

        def regions(n: int) -> np.ndarray:
            i = np.arange(n)
            return (i >= n - self.size).astype(np.int64) + (i >= n - self.shift)

        labels = regions(rows)[:, None] * 3 + regions(columns)[None, :]
        labels = self._cut(labels[None, :, :, None]).reshape(self.count, self.tokens)
        differs = labels[:, None, :] != labels[:, :, None]
        return np.where(differs, fill, 0.0)[:, None]

    def _cut(self, x: np.ndarray) -> np.ndarray:
        """numpy's window partition of [batch, rows, columns, channels] (the mask's)."""
        (gr, gc), s = self.grid, self.size
        x = x.reshape(x.shape[0], gr, s, gc, s, x.shape[-1]).transpose(0, 1, 3, 2, 4, 5)
        return x.reshape(-1, s, s, x.shape[-1])

    def split(self, op, x, channels: int):
        """[batch, rows * columns, channels] -> [batch * windows, tokens, channels]."""
        rows, columns = self.padded
        x = op.Reshape(x, [-1, self.rows, self.columns, channels])
        if (rows, columns) != (self.rows, self.columns):
            pads = [0, 0, 0, 0, 0, rows - self.rows, columns - self.columns, 0]
            x = op.Pad(x, pads)
        x = roll(op, roll(op, x, -self.shift, 1, rows), -self.shift, 2, columns)
        (gr, gc), s = self.grid, self.size
        x = op.Transpose(op.Reshape(x, [-1, gr, s, gc, s, channels]), perm=[0, 1, 3, 2, 4, 5])
        return op.Reshape(x, [-1, self.tokens, channels])

    def join(self, op, windows, channels: int):
        """The inverse of `split`: [batch * windows, tokens, channels] -> [batch, rows *
        columns, channels] (the padding cut off)."""
        rows, columns = self.padded
        (gr, gc), s = self.grid, self.size
        x = op.Reshape(windows, [-1, gr, gc, s, s, channels])
        x = op.Reshape(op.Transpose(x, perm=[0, 1, 3, 2, 4, 5]), [-1, rows, columns, channels])
        x = roll(op, roll(op, x, self.shift, 1, rows), self.shift, 2, columns)
        if (rows, columns) != (self.rows, self.columns):
            x = op.Slice(x, [0, 0], [self.rows, self.columns], [1, 2])
        return op.Reshape(x, [-1, self.rows * self.columns, channels])


def roll(op, x, shift: int, axis: int, length: int):
    """torch.roll along `axis` (of static `length`): element i moves to i + shift."""
    shift %= length
    if shift == 0:
        return x
    tail = op.Slice(x, [length - shift], [length], [axis])
    head = op.Slice(x, [0], [length - shift], [axis])
    return op.Concat(tail, head, axis=axis)


def relative_position_index(rows: int, columns: int) -> np.ndarray:
    """For each (query, key) pair of a rows x columns window, flattened, its row in a table of
    the (2 rows - 1) x (2 columns - 1) offsets."""
    coords = np.stack(np.meshgrid(np.arange(rows), np.arange(columns), indexing="ij"))
    coords = coords.reshape(2, -1)
    offsets = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0)
    return (
        (offsets[..., 0] + rows - 1) * (2 * columns - 1) + offsets[..., 1] + columns - 1
    ).reshape(-1)
