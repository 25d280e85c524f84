"""Convolutional and hybrid image graphs at sizes other than the configured one: those that take
any size (their padding, pooling and token grids computed from the run-time size) match
transformers at odd, even and non-square sizes; those built for the configured size (position
tables, attention biases, patch grids) declare it."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch

from converter import build
from converter.validate.encoding import reference_names
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import make_encoder

TOLERANCE = 1e-4
# (case, head, [height, width]) away from each case's 30x30 (62x62 for PVTv2 and SegFormer)
RESIZED = [
    ("bit:bottleneck_same", "BitModel", [36, 27]),  # run-time "SAME" padding, uneven
    ("cvt", "CvtModel", [41, 35]),
    ("efficientnet", "EfficientNetModel", [45, 33]),
    ("focalnet", "FocalNetModel", [37, 42]),  # padded to whole patches
    ("hgnet_v2", "HGNetV2ForImageClassification", [27, 40]),
    ("pp_lcnet", "PPLCNetForImageClassification", [37, 29]),
    ("pvt_v2:linear_attention", "PvtV2Model", [70, 49]),  # 7x7 pooling of other grids
    ("segformer", "SegformerModel", [47, 66]),
    ("swiftformer", "SwiftFormerModel", [44, 37]),
    ("textnet:odd_map", "TextNetModel", [41, 51]),  # 2x2 pooling of other maps
]
FIXED = [("levit", "LevitModel"), ("pvt", "PvtModel"), ("mobilevit", "MobileViTModel")]


@pytest.mark.parametrize(("case_id", "head", "size"), RESIZED)
def test_any_image_size_matches_transformers(tmp_path, case_id, head, size):
    case = CASES[case_id]
    reference = make_encoder(case_id, case, head, tmp_path / "hf")
    package = build(str(tmp_path / "hf"), progress=False)
    package.save(tmp_path / "onnx", progress=False)
    session = ort.InferenceSession(tmp_path / "onnx" / package.components[0].filename)
    assert [d.value for d in package.components[0].model.graph.inputs[0].shape.dims[2:]] == [
        "height",
        "width",
    ]
    pixels = np.random.default_rng(1).standard_normal((2, 3, *size)).astype(np.float32)
    with torch.no_grad():
        expected = reference(pixel_values=torch.from_numpy(pixels))
    actuals = session.run(None, {"pixel_values": pixels})
    for output, actual in zip(session.get_outputs(), actuals, strict=True):
        want = getattr(expected, reference_names(case.config).get(output.name, output.name)).numpy()
        assert actual.shape == want.shape, output.name
        assert np.abs(actual - want).max() <= TOLERANCE, output.name


@pytest.mark.parametrize(("case_id", "head"), FIXED)
def test_a_grid_built_for_the_configured_size_fixes_it(tmp_path, case_id, head):
    case = CASES[case_id]
    make_encoder(case_id, case, head, tmp_path / "hf")
    package = build(str(tmp_path / "hf"), progress=False)
    dims = list(package.components[0].model.graph.inputs[0].shape.dims)
    side = case.config["image_size"]
    assert dims[1:] == [3, side, side]
