"""`mobius validate` on convolutional image packages: feature maps compared image by image (a
[batch, channels, 1, 1] pooler's rows of one value, some zero after a ReLU, would make every
cosine meaningless), and PP-LCNet's logits found under the name transformers gives them
(last_hidden_state)."""

from __future__ import annotations

import pytest

from converter import build
from converter.validate import validate
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import make_encoder


@pytest.mark.parametrize(
    ("case_id", "head"), [("bit", "BitModel"), ("pp_lcnet", "PPLCNetForImageClassification")]
)
def test_validate_passes_against_transformers(tmp_path, case_id, head):
    make_encoder(case_id, CASES[case_id], head, tmp_path / "hf")
    package = build(str(tmp_path / "hf"), ep="cpu", progress=False)
    report = validate(package.save(tmp_path / "package", progress=False))
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
