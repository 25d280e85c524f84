"""Every family against transformers on the same random weights (f32, logits, KV path)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from converter import build
from tests.parity.families import CASES
from tests.parity.onnx_runner import OnnxDecoder
from tests.parity.reference import generate_steps, make_checkpoint

TOLERANCE = 1e-4
RNG = np.random.default_rng(0)
PROMPT = RNG.integers(3, 128, size=(1, 7))
STEPS = [RNG.integers(3, 128, size=(1, 1)) for _ in range(3)]
# batch of two: the second row is left-padded by 3
PADDED_IDS = np.concatenate([PROMPT, np.pad(PROMPT[:, 3:], ((0, 0), (3, 0)))], axis=0)
PADDED_MASK = np.array([[1] * 7, [0] * 3 + [1] * 4])
PADDED_STEPS = [np.concatenate([s, s[:, ::-1] + 1]) for s in STEPS[:2]]


@pytest.fixture(scope="module", params=sorted(CASES))
def converted(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    reference = make_checkpoint(request.param, folder / "hf")
    build(str(folder / "hf"), progress=False).save(folder / "onnx", progress=False)
    return reference, OnnxDecoder(folder / "onnx")


@pytest.fixture
def reference(converted):
    """A fresh copy per test: dynamic rope keeps state across calls in transformers."""
    return copy.deepcopy(converted[0])


@pytest.fixture
def onnx(converted):
    return converted[1]


def _max_diff(expected, actual, mask=None):
    diff = np.abs(expected - actual)
    if mask is not None:
        diff = diff[mask.astype(bool)]
    return float(diff.max())


def test_prefill_and_decode(reference, onnx):
    mask = np.ones_like(PROMPT)
    expected = generate_steps(reference, PROMPT, mask, STEPS)
    actual = onnx.generate_steps(PROMPT, mask, STEPS)
    diffs = [_max_diff(e, a) for e, a in zip(expected, actual, strict=True)]
    print("prefill / decode x3 max abs diff:", diffs)
    assert max(diffs) <= TOLERANCE, diffs


def test_batch_left_padding(reference, onnx):
    expected = generate_steps(reference, PADDED_IDS, PADDED_MASK, PADDED_STEPS)
    actual = onnx.generate_steps(PADDED_IDS, PADDED_MASK, PADDED_STEPS)
    prefill_diff = _max_diff(expected[0], actual[0], PADDED_MASK)
    decode_diffs = [_max_diff(e, a) for e, a in zip(expected[1:], actual[1:], strict=True)]
    print("padded prefill / decode max abs diff:", prefill_diff, decode_diffs)
    assert max(prefill_diff, *decode_diffs) <= TOLERANCE
