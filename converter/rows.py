"""Weights read and written a band of rows at a time, so writing a package holds a few bands
in memory, never a whole tensor (a 128k-token embedding cast to float32 is 2 GB).

Bands are read with pread, not memory-mapped: a mapped page counts as the process's memory
until the whole map is released, so reading a tensor through a map costs its size in RSS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

BAND_BYTES = 32 << 20  # source bytes per band
WHOLE_TRANSPOSE_BYTES = 256 << 20  # smaller tensors are transposed in memory, in one piece


class Rows:
    """A tensor read by bands of its first axis. Also the array-like quantize_blocks slices
    (`shape`, `dtype`, `ndim`, `rows[lo:hi]`)."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def row_bytes(self) -> int:
        return math.prod(self.shape[1:]) * self.dtype.itemsize

    def band(self, lo: int, hi: int) -> np.ndarray:
        raise NotImplementedError

    def __getitem__(self, rows: slice) -> np.ndarray:
        lo, hi, step = rows.indices(self.shape[0])
        assert step == 1, "bands are contiguous"
        return self.band(lo, hi)

    def array(self) -> np.ndarray:
        return self.band(0, self.shape[0])

    def bands(self):
        """(lo, hi) bounds of bands of about BAND_BYTES."""
        step = max(1, BAND_BYTES // max(1, self.row_bytes))
        for lo in range(0, self.shape[0], step):
            yield lo, min(lo + step, self.shape[0])


class FileRows(Rows):
    """A tensor stored contiguously in `path` at `offset`."""

    def __init__(self, path, offset: int, shape: tuple[int, ...], dtype: np.dtype):
        self.path, self.offset, self.shape, self.dtype = path, offset, tuple(shape), dtype

    def band(self, lo: int, hi: int) -> np.ndarray:
        out = np.empty((hi - lo, *self.shape[1:]), self.dtype)
        view = memoryview(out.reshape(-1).view(np.uint8))
        with open(self.path, "rb", buffering=0) as f:
            f.seek(self.offset + lo * self.row_bytes)
            done = 0
            while done < len(view):
                n = f.readinto(view[done:])
                if not n:
                    raise OSError(f"{self.path} ended inside a tensor")
                done += n
        return out


class ConcatRows(Rows):
    """Parts joined along `axis` (0: one after the other; last: side by side, row by row)."""

    def __init__(self, parts: Sequence[Rows], axis: int):
        self.parts, self.dtype = list(parts), parts[0].dtype
        self.axis = axis % parts[0].ndim
        shape = list(parts[0].shape)
        shape[self.axis] = sum(p.shape[self.axis] for p in parts)
        self.shape = tuple(shape)

    def band(self, lo: int, hi: int) -> np.ndarray:
        if self.axis:
            return np.concatenate([p.band(lo, hi) for p in self.parts], axis=self.axis)
        pieces, start = [], 0
        for part in self.parts:
            end = start + part.shape[0]
            if lo < end and hi > start:
                pieces.append(part.band(max(lo, start) - start, min(hi, end) - start))
            start = end
        return np.concatenate(pieces) if len(pieces) > 1 else pieces[0]


def write_rows(file, rows: Rows, target: np.dtype, transposed: bool = False) -> None:
    """Write `rows` (transposed when asked: a 2-D [n, k] as [k, n]) cast to `target` at the
    file's position, one band at a time."""
    if not transposed:
        for lo, hi in rows.bands():
            file.write(_bytes(rows.band(lo, hi), target))
        return
    n, k = rows.shape
    if n * rows.row_bytes <= WHOLE_TRANSPOSE_BYTES:
        file.write(_bytes(rows.array().T, target))
        return
    # column pieces of each band go to their places in the [k, n] layout
    base, item = file.tell(), np.dtype(target).itemsize
    for lo, hi in rows.bands():
        piece = np.ascontiguousarray(rows.band(lo, hi).T, dtype=target)
        for column in range(k):
            file.seek(base + (column * n + lo) * item)
            file.write(piece[column].view(np.uint8))
    file.seek(base + n * k * item)


def _bytes(array: np.ndarray, target: np.dtype) -> memoryview:
    array = np.ascontiguousarray(array, dtype=target)
    return memoryview(array.reshape(-1).view(np.uint8))
