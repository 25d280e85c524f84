"""`mobius validate` runs the BERT-like families whose graphs read more than the text inputs
or position them their own way: LayoutLM's bbox input, RoCBert's shape and pronunciation ids,
Longformer's global_attention_mask, ESM's rotary positions and token dropout, TAPAS's 7-wide
token types and per-cell positions; and NeoMME's retrieval outputs against its retrieval head."""

from __future__ import annotations

import pytest

from converter import build
from converter.validate import validate
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import make_encoder


@pytest.mark.parametrize(
    ("case_id", "head", "ep"),
    [
        ("layoutlm", None, "cpu"),
        ("esm", None, "default"),
        ("roc_bert", None, "cpu"),
        ("longformer", None, "cpu"),
        ("tapas", None, "cpu"),
        ("neomme", "NeoMMEForRetrieval", "cpu"),
    ],
)
def test_validate_passes_against_transformers(tmp_path, case_id, head, ep):
    case = CASES[case_id]
    make_encoder(case_id, case, head or case.heads[0], tmp_path / "hf")
    package = build(str(tmp_path / "hf"), ep=ep, progress=False)
    report = validate(package.save(tmp_path / "package", progress=False))
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
