"""quantize_blocks splits a tensor into chunks of rows and quantizes them on several threads:
the result must not depend on either. Checked byte for byte against a plain per-block
reference of the module doc's RTN formulas (no chunks, no threads, no transposes)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from converter import quantize
from converter.quantize import quantize_blocks

TINY = np.finfo(np.float32).tiny


def reference(w: np.ndarray, block_size: int, symmetric: bool, bits: int):
    """(packed, scales, zero points or None) of RTN, one block at a time in [N, blocks, size]."""
    n, k = w.shape
    blocks = -(-k // block_size)
    values = np.zeros((n, blocks * block_size), np.float32)
    values[:, :k] = w.astype(np.float32)
    values = values.reshape(n, blocks, block_size)
    top, middle = np.float32((1 << bits) - 1), np.float32(1 << (bits - 1))
    high, low = values.max(axis=-1), values.min(axis=-1)
    if symmetric:
        scale = np.where(high >= -low, high, low) / -middle
    else:
        high, low = np.maximum(high, 0), np.minimum(low, 0)
        scale = (high - low) / top
    inverse = np.zeros_like(scale)
    np.divide(1, scale, out=inverse, where=np.abs(scale) >= TINY)
    offset = middle if symmetric else np.clip(np.rint(-low * inverse), 0, top)
    codes = np.clip(np.rint(values * inverse[..., None] + np.asarray(offset)[..., None]), 0, top)
    codes = codes.astype(np.uint8)
    if bits == 4:
        codes = codes[..., 0::2] | (codes[..., 1::2] << 4)
    zero_points = None if symmetric else np.asarray(offset, np.uint8)
    if zero_points is not None and bits == 4:
        zero_points = np.pad(zero_points, ((0, 0), (0, blocks % 2)))
        zero_points = zero_points[:, 0::2] | (zero_points[:, 1::2] << 4)
    return codes, scale, zero_points


def weight(dtype) -> np.ndarray:
    rng = np.random.default_rng(7)
    w = rng.standard_t(3, (45, 300)).astype(np.float32) * rng.uniform(0.01, 2, (45, 1))
    w[3] = 0  # an all-zero row
    w[5, :40] = 0.25  # constant blocks
    return w.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize(("chunk_values", "workers"), [(1, 1), (1, 3), (2000, 2), (1 << 20, 2)])
def test_rtn_matches_reference_for_any_chunks_and_threads(
    dtype, bits, symmetric, chunk_values, workers, monkeypatch
):
    monkeypatch.setattr(quantize, "_CHUNK_VALUES", chunk_values)  # 1: one row per chunk
    monkeypatch.setattr(quantize, "_WORKERS", workers)
    w = weight(dtype)  # K 300: the last block of 32 or 128 is padded
    for block_size in (32, 128):
        q = quantize_blocks(w, block_size, symmetric, bits)
        packed, scales, zero_points = reference(w, block_size, symmetric, bits)
        assert q.packed.tobytes() == packed.tobytes()
        assert q.scales.tobytes() == scales.astype(np.float32).tobytes()
        assert (q.zero_points is None) == symmetric
        if not symmetric:
            assert q.zero_points.tobytes() == zero_points.tobytes()


@pytest.mark.parametrize("symmetric", [True, False])
def test_search_independent_of_chunks_and_threads(symmetric, monkeypatch):
    w = weight(np.float32)
    first = quantize_blocks(w, 32, symmetric, method="search")
    monkeypatch.setattr(quantize, "_CHUNK_VALUES", 1)
    monkeypatch.setattr(quantize, "_WORKERS", 3)
    other = quantize_blocks(w, 32, symmetric, method="search")
    for part in ("packed", "scales", "zero_points"):
        assert getattr(first, part) is None or (
            getattr(first, part).tobytes() == getattr(other, part).tobytes()
        )
