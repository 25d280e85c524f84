"""`mobius validate` runs the BERT-like families whose graphs read more than the text inputs
or position them their own way: LayoutLM's bbox input, RoCBert's shape and pronunciation ids,
ESM's rotary positions and token dropout."""

from __future__ import annotations

import pytest

from converter import build
from converter.validate import validate
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import make_encoder


@pytest.mark.parametrize(
    ("case_id", "ep"), [("layoutlm", "cpu"), ("esm", "default"), ("roc_bert", "cpu")]
)
def test_validate_passes_against_transformers(tmp_path, case_id, ep):
    case = CASES[case_id]
    make_encoder(case_id, case, case.heads[0], tmp_path / "hf")
    package = build(str(tmp_path / "hf"), ep=ep, progress=False)
    report = validate(package.save(tmp_path / "package", progress=False))
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
