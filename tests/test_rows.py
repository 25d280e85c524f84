"""Weights are read, cast, transposed and written by bands of rows: the bytes are those of the
whole-tensor path, and the memory is a band's, not the tensor's."""

from __future__ import annotations

import io
import shutil
import tracemalloc

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from converter import rows as rows_module
from converter.build import build
from converter.rows import ConcatRows, FileRows, write_rows
from converter.weights import Checkpoint
from tests.checkpoints import TINY_LLAMA


@pytest.fixture
def stored(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {
        "a": rng.standard_normal((37, 24)).astype(ml_dtypes.bfloat16),
        "b": rng.standard_normal((5, 24)).astype(ml_dtypes.bfloat16),
        "c": rng.standard_normal((37, 8)).astype(ml_dtypes.bfloat16),
    }
    save_file(arrays, tmp_path / "model.safetensors")
    refs = Checkpoint(tmp_path).tensors
    return arrays, {name: refs[name].rows() for name in arrays}


def test_file_rows_read_any_band(stored):
    arrays, rows = stored
    assert isinstance(rows["a"], FileRows)
    np.testing.assert_array_equal(rows["a"].band(3, 30), arrays["a"][3:30])
    np.testing.assert_array_equal(rows["a"][0:37], arrays["a"])


@pytest.mark.parametrize(("names", "axis"), [(("a", "b"), 0), (("a", "c"), -1)])
def test_concat_rows_match_numpy(stored, names, axis):
    arrays, rows = stored
    joined = ConcatRows([rows[n] for n in names], axis)
    expected = np.concatenate([arrays[n] for n in names], axis=axis)
    assert joined.shape == expected.shape
    for lo, hi in ((0, 5), (30, 40), (36, 42), (0, expected.shape[0])):
        hi = min(hi, expected.shape[0])
        np.testing.assert_array_equal(joined.band(lo, hi), expected[lo:hi])


@pytest.mark.parametrize("transposed", [False, True])
def test_write_rows_by_small_bands(stored, monkeypatch, transposed):
    arrays, rows = stored
    monkeypatch.setattr(rows_module, "BAND_BYTES", 100)  # two rows a band
    monkeypatch.setattr(rows_module, "WHOLE_TRANSPOSE_BYTES", 0)
    out = io.BytesIO()
    out.write(b"head")
    write_rows(out, rows["a"], np.dtype(np.float32), transposed)
    expected = arrays["a"].astype(np.float32)
    expected = expected.T if transposed else expected
    assert out.getvalue() == b"head" + np.ascontiguousarray(expected).tobytes()
    assert out.tell() == len(out.getvalue())


def test_writing_holds_a_band_not_the_tensor(tmp_path, monkeypatch):
    monkeypatch.setattr(rows_module, "BAND_BYTES", 1 << 20)
    big = np.zeros((4096, 2048), ml_dtypes.bfloat16)  # 16 MB; 32 MB as float32
    save_file({"w": big}, tmp_path / "model.safetensors")
    rows = Checkpoint(tmp_path).tensors["w"].rows()
    for transposed in (False, True):
        monkeypatch.setattr(rows_module, "WHOLE_TRANSPOSE_BYTES", 0)
        sink = (tmp_path / f"out{transposed}").open("wb")
        tracemalloc.start()
        write_rows(sink, rows, np.dtype(np.float32), transposed)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        sink.close()
        assert peak < 6 << 20, f"writing held {peak} bytes (transposed={transposed})"


def test_banded_package_is_byte_identical(tmp_path, monkeypatch):
    whole = build(str(TINY_LLAMA), ep="cpu", progress=False).save(tmp_path / "whole")
    monkeypatch.setattr(rows_module, "BAND_BYTES", 4096)
    monkeypatch.setattr(rows_module, "WHOLE_TRANSPOSE_BYTES", 0)
    banded = build(str(TINY_LLAMA), ep="cpu", progress=False).save(tmp_path / "banded")
    for name in ("model.onnx", "model.onnx.data"):
        assert (whole / name).read_bytes() == (banded / name).read_bytes(), name
    shutil.rmtree(tmp_path)
