"""`mobius validate` on encoder-decoder packages: teacher-forced logits over both caches and
greedy tokens against transformers (or the default f32 variant without it)."""

from __future__ import annotations

import pytest

from converter import build
from converter.validate import validate
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import make_seq2seq


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bart") / "hf"
    make_seq2seq("bart", CASES["bart"], folder)
    return folder


@pytest.mark.parametrize(("ep", "dtype"), [("default", "f32"), ("cpu", "f16"), ("cpu", "int4")])
def test_seq2seq_variants_pass_against_transformers(checkpoint, tmp_path, ep, dtype):
    package = build(str(checkpoint), ep=ep, dtype=dtype, progress=False)
    report = validate(package.save(tmp_path, progress=False))
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
    assert report.greedy_match == 1.0


def test_default_reference_checks_other_variants(checkpoint, tmp_path):
    package = build(str(checkpoint), ep="cpu", dtype="int8", progress=False)
    report = validate(package.save(tmp_path, progress=False), reference="default")
    assert report.status == "passed", report.failures
    assert report.reference == "default-f32"
    assert report.max_abs_diff > 0


def test_a_package_of_other_weights_fails(checkpoint, tmp_path):
    """Validated against a checkpoint it was not built from, the figures miss the bounds."""
    other = tmp_path / "other"
    make_seq2seq("bart:other", CASES["bart"], other)
    package = build(str(checkpoint), progress=False)
    report = validate(package.save(tmp_path / "pkg", progress=False), source=other)
    assert report.status == "failed"
    assert any("max_abs_diff" in failure for failure in report.failures)
