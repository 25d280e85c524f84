"""Gemma 3's and PaliGemma's packages build quantized (the lowering checks every MatMul it
quantizes was declared: Gemma 3's projection is a MatMul by mm_input_projection_weight) and
run to finite logits."""

from __future__ import annotations

import numpy as np
import pytest

from converter import build
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import INPUTS, case_rng, make_vlm, step_tokens


@pytest.mark.parametrize("case_id", ["gemma3", "paligemma"])
@pytest.mark.parametrize("dtype", ["int4", "int8"])
def test_quantized_packages_run(tmp_path, case_id, dtype):
    model = make_vlm(case_id, CASES[case_id], tmp_path / "hf")
    build(str(tmp_path / "hf"), ep="cpu", dtype=dtype, progress=False).save(
        tmp_path / "onnx", progress=False
    )
    rng = case_rng(case_id)
    image, ids = INPUTS[CASES[case_id].inputs](model, rng)
    logits = OnnxVisionLanguage(tmp_path / "onnx").run(image, ids, step_tokens(model, 2, rng))
    assert all(np.isfinite(step).all() for step in logits)
