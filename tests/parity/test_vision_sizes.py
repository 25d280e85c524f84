"""Image sizes other than the configured one: DINOv2's graphs resize their position grid (as
transformers does on every call) and take any height and width; ViT-layout graphs whose
position table fixes the size declare that size, so onnxruntime refuses another."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch

from converter import build
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import make_encoder

TOLERANCE = 1e-4
# (case, head, [height, width]): a smaller, a larger and a non-square grid than the 4x4 table
RESIZED = [
    ("dinov2:swiglu", "Dinov2Model", [16, 16]),
    ("dinov2", "Dinov2ForImageClassification", [40, 24]),
    ("dinov2_with_registers", "Dinov2WithRegistersModel", [56, 24]),
    ("dinov2_with_registers", "Dinov2WithRegistersForImageClassification", [24, 48]),
]


@pytest.mark.parametrize(("case_id", "head", "size"), RESIZED)
@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_dinov2_takes_other_image_sizes(tmp_path, case_id, head, size, ep):
    reference = make_encoder(case_id, CASES[case_id], head, tmp_path / "hf")
    package = build(str(tmp_path / "hf"), ep=ep, progress=False)
    package.save(tmp_path / ep, progress=False)
    session = ort.InferenceSession(tmp_path / ep / package.components[0].filename)
    pixels = np.random.default_rng(1).standard_normal((2, 3, *size)).astype(np.float32)
    with torch.no_grad():
        expected = reference(pixel_values=torch.from_numpy(pixels))
    actuals = session.run(None, {"pixel_values": pixels})
    for output, actual in zip(session.get_outputs(), actuals, strict=True):
        want = getattr(expected, output.name).numpy()
        assert actual.shape == want.shape, output.name
        assert np.abs(actual - want).max() <= TOLERANCE, output.name


def test_a_fixed_position_table_fixes_the_image_size(tmp_path):
    make_encoder("vit", CASES["vit"], "ViTModel", tmp_path / "hf")
    package = build(str(tmp_path / "hf"), progress=False)
    dims = package.components[0].model.graph.inputs[0].shape.dims
    assert list(dims)[1:] == [3, 32, 32]
