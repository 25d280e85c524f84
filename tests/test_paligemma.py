"""A PaliGemma package validates against transformers given the token types its processor
makes (0 on the prompt): the reference attends over the prompt both ways, as the decoder's
first call does."""

from __future__ import annotations

from converter import build
from converter.validate import validate
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm


def test_validate_gives_transformers_the_prefix_token_types(tmp_path):
    make_vlm("paligemma", CASES["paligemma"], tmp_path / "hf")
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "onnx", progress=False)
    report = validate(tmp_path / "onnx", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0
