"""`mobius validate` on speech encoder-decoder packages (Whisper's log-mel inputs, Moonshine's
waveform and Speech2Text's filter banks with their masks): the encoder-decoder probe (inputs of
the graph's own names and sizes, teacher-forced logits over both caches, greedy tokens) against
transformers."""

from __future__ import annotations

import pytest

from converter import build
from converter.validate import validate
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import make_seq2seq


@pytest.fixture(scope="module", params=["whisper", "moonshine", "speech_to_text"])
def checkpoint(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param) / "hf"
    make_seq2seq(request.param, CASES[request.param], folder)
    return folder


@pytest.mark.parametrize(("ep", "dtype"), [("default", "f32"), ("cpu", "int4"), ("cpu", "f16")])
def test_speech_variants_pass_against_transformers(checkpoint, tmp_path, ep, dtype):
    package = build(str(checkpoint), ep=ep, dtype=dtype, progress=False)
    report = validate(package.save(tmp_path, progress=False))
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
    if dtype != "int4":  # int4 rounding may flip a random tiny model's near-tied argmax
        assert report.greedy_match == 1.0
