"""Per-channel symmetric int8 weights: every value within half a step of its reconstruction,
codes inside the 7-bit range that keeps x86 uint8 x int8 sums from saturating, and the same
result for any input dtype, layout or chunking."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from converter import quantize_int8
from converter.quantize_int8 import LIMIT, quantize_q8

SHAPES = [(1, 1), (1, 100), (7, 64), (33, 257), (300, 40)]


def random_weight(shape: tuple[int, int], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.01, 3.0, size=(shape[0], 1))  # rows of different magnitudes
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("shape", SHAPES)
def test_round_trip_within_half_step(shape):
    w = random_weight(shape)
    q = quantize_q8(w)
    n, k = shape
    assert q.values.shape == (k, n) and q.values.dtype == np.int8
    assert q.scales.shape == (n,) and q.scales.dtype == np.float32
    assert np.abs(q.values.astype(np.int16)).max() <= LIMIT == 64
    # the largest value of each row lands on the edge of the range: no level is wasted
    assert np.all(np.abs(q.values.astype(np.int16)).max(axis=0) == LIMIT)
    restored = q.dequantize()
    assert restored.shape == (n, k) and restored.dtype == np.float32
    assert np.all(np.abs(restored - w) <= q.scales[:, None] * (0.5 + 1e-5))


def test_zero_rows_and_constant_rows():
    w = random_weight((4, 50))
    w[1] = 0.0
    w[2] = -0.75
    q = quantize_q8(w)
    restored = q.dequantize()
    assert q.scales[1] == 0 and np.all(q.values[:, 1] == 0) and np.all(restored[1] == 0)
    np.testing.assert_allclose(restored[2], -0.75, rtol=1e-6)


def test_half_precision_and_transposed_inputs_match_float32(monkeypatch):
    w = random_weight((40, 72)).astype(np.float16)
    expected = quantize_q8(w.astype(np.float32))
    stored_kn = np.ascontiguousarray(w.astype(ml_dtypes.bfloat16).T)  # as GPT-2's Conv1D
    monkeypatch.setattr(quantize_int8, "_CHUNK_VALUES", 100)  # one row per chunk
    for got, ref in (
        (quantize_q8(w), expected),
        (quantize_q8(stored_kn.T), quantize_q8(stored_kn.T.astype(np.float32))),
    ):
        np.testing.assert_array_equal(got.values, ref.values)
        np.testing.assert_array_equal(got.scales, ref.scales)


def test_read_only_memory_maps_are_not_written(tmp_path):
    path = tmp_path / "w.npy"
    np.save(path, random_weight((5, 30)))
    mapped = np.load(path, mmap_mode="r")
    np.testing.assert_array_equal(quantize_q8(mapped).values, quantize_q8(np.load(path)).values)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_weights_are_refused(bad):
    w = random_weight((3, 8))
    w[1, 2] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        quantize_q8(w)
