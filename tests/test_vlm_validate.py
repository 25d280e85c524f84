"""validate() on every vision-language parity family: the default f32 package against
transformers passes, with the vision graph's image features and the embedding graph's
inputs_embeds compared on their own; a package whose vision graph is wrong fails by name."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import pytest

from converter import build
from converter.validate import validate
from converter.validate.report import format_report
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm

FAMILIES = sorted(case for case in CASES if ":" not in case)


@pytest.fixture(scope="module", params=FAMILIES)
def package(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    make_vlm(request.param, CASES[request.param], folder / "hf")
    build(str(folder / "hf"), progress=False).save(folder / "package", progress=False)
    return folder


def test_each_component_matches_transformers(package):
    report = validate(package / "package", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert set(report.components) == {"image_features", "inputs_embeds"}
    for figures in report.components.values():
        assert figures["max_abs_diff"] < 1e-4
        assert figures["min_cosine"] > 0.99999
    assert "image_features max abs diff" in format_report(report)


def test_a_wrong_vision_graph_fails_as_the_image_features(package, tmp_path):
    model = ir.load(package / "package" / "vision.onnx")
    # the matrix the graph reads last: the projector's, Ovis2's visual table (a shift of every
    # row the tower's norms would undo, as Ovis2's head_norm undoes one of head_linear)
    matrices = {id(v) for v in model.graph.initializers.values() if len(v.shape) == 2}
    weight = next(v for n in reversed(list(model.graph)) for v in n.inputs if id(v) in matrices)
    weight.const_value = ir.tensor(weight.const_value.numpy() * np.float32(1.5), name=weight.name)
    broken = tmp_path / "broken"
    broken.mkdir()
    for path in (package / "package").iterdir():
        if path.is_file() and not path.name.startswith("vision.onnx"):
            (broken / path.name).write_bytes(path.read_bytes())
    ir.save(model, broken / "vision.onnx", external_data="vision.onnx.data")
    report = validate(broken, reference="transformers", steps=3, source=package / "hf")
    assert report.status == "failed"
    assert any(f.startswith("image_features: max_abs_diff") for f in report.failures)
