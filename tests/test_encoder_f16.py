"""f16 encoder packages load and agree with transformers (f32) where the graph has a pattern
onnxruntime once crashed on: DeBERTa's relative rows multiplied at rank 4 (at rank 3,
onnxruntime 1.32's NchwcTransformer segfaulted creating the f16 session)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from converter import build
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import INPUTS, TEXT_MASK, make_encoder, reference_outputs

F16_TOLERANCE = 2e-2


@pytest.mark.parametrize(
    ("case_id", "head"),
    [("deberta", "DebertaForMaskedLM"), ("deberta-v2", "DebertaV2ForSequenceClassification")],
)
def test_f16_package_runs_and_matches(case_id, head, tmp_path):
    case = CASES[case_id]
    reference = make_encoder(case_id, case, head, tmp_path / "hf")
    package = build(str(tmp_path / "hf"), dtype="f16", progress=False)
    package.save(tmp_path / "onnx", progress=False)
    session = ort.InferenceSession(tmp_path / "onnx" / package.components[0].filename)
    feeds = INPUTS[case.inputs](case.config)
    feeds = {i.name: feeds[i.name] for i in session.get_inputs()}
    actual = session.run(None, feeds)[0].astype(np.float32)
    expected = reference_outputs(reference, feeds).logits.numpy()
    if actual.ndim == 3:
        actual, expected = actual * TEXT_MASK[..., None], expected * TEXT_MASK[..., None]
    assert np.abs(actual - expected).max() <= F16_TOLERANCE
