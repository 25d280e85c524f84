"""`mobius validate` on the BART-like families whose config reads otherwise than BART's: FSMT
names its source vocabulary src_vocab_size (the probe's token ids must come from it)."""

from __future__ import annotations

from converter import build
from converter.validate import validate
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import make_seq2seq


def test_fsmt_validates_against_transformers(tmp_path):
    make_seq2seq("fsmt", CASES["fsmt"], tmp_path / "hf")
    package = build(str(tmp_path / "hf"), progress=False).save(tmp_path / "pkg", progress=False)
    report = validate(package)
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
    assert report.greedy_match == 1.0
