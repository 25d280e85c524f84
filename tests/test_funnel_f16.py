"""Funnel's f16 packages load and agree with transformers (f32) on both EPs. Its relative and
segment terms multiply rank-4 queries by position and segment rows; while those rows were of
rank 3 or 2, onnxruntime 1.32's NchwcTransformer segfaulted creating the f16 cpu session of
this config (max pooling), as it did for DeBERTa's relative rows."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from converter import build
from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.funnel import TINY
from tests.parity.encoder_reference import INPUTS, TEXT_MASK, make_encoder, reference_outputs

F16_TOLERANCE = 2e-2
SHAPE = {"block_repeats": [1, 1, 1], "d_inner": 48, "vocab_size": 64}
CRASHED = {**TINY, **SHAPE, "pooling_type": "max"}


@pytest.mark.parametrize("ep", ["default", "cpu"])
@pytest.mark.parametrize(
    "config", [CRASHED, {**CRASHED, "attention_type": "factorized"}], ids=["shift", "factorized"]
)
def test_f16_package_runs_and_matches(config, ep, tmp_path):
    case = EncoderCase(config, ("FunnelModel",))
    reference = make_encoder("funnel:f16", case, "FunnelModel", tmp_path / "hf")
    package = build(str(tmp_path / "hf"), ep=ep, dtype="f16", progress=False)
    package.save(tmp_path / "onnx", progress=False)
    session = ort.InferenceSession(tmp_path / "onnx" / package.components[0].filename)
    feeds = INPUTS[case.inputs](case.config)
    actual = session.run(None, feeds)[0].astype(np.float32)
    expected = reference_outputs(reference, feeds).last_hidden_state.numpy()
    kept = TEXT_MASK[..., None]
    assert np.abs(actual * kept - expected * kept).max() <= F16_TOLERANCE
