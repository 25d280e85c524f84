"""Two-tower packages in the other dtypes: f16 graphs (float32 pixel values in and outputs
out, cast inside) near transformers, int4 and int8 packages that build and run (SigLIP's
modules named `head` are not LM heads to keep float); `mobius validate` on two-tower
packages."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from converter import build
from converter.tasks.base import DTYPE_SUFFIXES
from converter.validate import validate
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import INPUTS, make_encoder, reference_outputs

F16_TOLERANCE = 1e-2  # on the L2-normalized embeddings and pooled features


@pytest.fixture(scope="module")
def siglip2(tmp_path_factory):
    folder = tmp_path_factory.mktemp("siglip2")
    case = CASES["siglip2"]
    return case, make_encoder("siglip2", case, "Siglip2Model", folder / "hf"), folder


@pytest.mark.parametrize(
    ("ep", "dtype"), [("cpu", "f16"), ("default", "f16"), ("cpu", "int4"), ("cpu", "int8")]
)
def test_every_graph_runs(siglip2, ep, dtype):
    case, reference, folder = siglip2
    package = build(str(folder / "hf"), ep=ep, dtype=dtype, progress=False)
    package.save(folder / f"{ep}-{dtype}", progress=False)
    inputs = INPUTS[case.inputs](case.config)
    assert [c.filename.split("/")[-1] for c in package.components] == [
        f"{name}{DTYPE_SUFFIXES[dtype]}.onnx" for name in ("model", "text_model", "vision_model")
    ]
    for component in package.components:
        session = ort.InferenceSession(folder / f"{ep}-{dtype}" / component.filename)
        types = {i.name: i.type for i in session.get_inputs()}
        assert types.get("pixel_values", "tensor(float)") == "tensor(float)"
        feeds = {i.name: inputs[i.name] for i in session.get_inputs()}
        expected = reference_outputs(reference, feeds, component.role)
        names = [o.name for o in session.get_outputs()]
        for name, actual in zip(names, session.run(None, feeds), strict=True):
            assert actual.dtype == np.float32, (component.filename, name)  # whatever the dtype
            assert np.isfinite(actual).all(), (component.filename, name)
            if dtype == "f16" and name.endswith(("embeds", "pooler_output")):
                want = getattr(expected, name).numpy()
                diff = np.abs(actual.astype(np.float32) - want).max()
                assert diff <= F16_TOLERANCE, (component.filename, name, diff)


@pytest.mark.parametrize(
    ("case_id", "head", "ep", "dtype"),
    [
        ("clip", "CLIPModel", "cpu", "f16"),
        ("siglip2", "Siglip2Model", "cpu", "f32"),
        ("siglip", "SiglipForImageClassification", "cpu", "f16"),
    ],
)
def test_validate_passes_against_transformers(tmp_path, case_id, head, ep, dtype):
    make_encoder(case_id, CASES[case_id], head, tmp_path / "hf")
    package = build(str(tmp_path / "hf"), ep=ep, dtype=dtype, progress=False)
    report = validate(package.save(tmp_path / "package", progress=False))
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
