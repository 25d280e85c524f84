"""`mobius validate` on Whisper packages: the encoder-decoder probe (log-mel inputs of the
graph's size, teacher-forced logits over both caches, greedy tokens) against transformers."""

from __future__ import annotations

import pytest

from converter import build
from converter.validate import validate
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import make_seq2seq


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whisper") / "hf"
    make_seq2seq("whisper", CASES["whisper"], folder)
    return folder


@pytest.mark.parametrize(("ep", "dtype"), [("default", "f32"), ("cpu", "int4")])
def test_whisper_variants_pass_against_transformers(checkpoint, tmp_path, ep, dtype):
    package = build(str(checkpoint), ep=ep, dtype=dtype, progress=False)
    report = validate(package.save(tmp_path, progress=False))
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
    assert report.greedy_match == 1.0
