"""Every encoder family against transformers on the same random weights (f32), on the portable
`default` graph and the `cpu` graph with onnxruntime's fused encoder kernels, for each head the
case names: a batch of two whose second row is padded, every output compared on the positions
the mask keeps."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from converter import build
from converter.execution_providers import ENCODER_MHA, execution_provider
from converter.lowering import Plan, expected_fusions
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import INPUTS, TEXT_MASK, make_encoder, reference_outputs

TOLERANCE = 1e-4
PARAMS = [(case, head) for case in sorted(CASES) for head in CASES[case].heads]


@pytest.fixture(scope="module", params=PARAMS, ids=[f"{c}-{h}" for c, h in PARAMS])
def converted(request, tmp_path_factory):
    case_id, head = request.param
    case = CASES[case_id]
    folder = tmp_path_factory.mktemp(case_id.replace(":", "-"))
    reference = make_encoder(case_id, case, head, folder / "hf")
    packages = {}
    for ep in ("default", "cpu"):
        packages[ep] = build(str(folder / "hf"), ep=ep, progress=False)
        packages[ep].save(folder / ep, progress=False)
    return case, reference, packages, folder


def _masked(array: np.ndarray, inputs: str) -> np.ndarray:
    """Zero the padded positions of text outputs that have a sequence axis."""
    if inputs == "text" and array.ndim >= 2 and array.shape[:2] == TEXT_MASK.shape:
        mask = TEXT_MASK.reshape(*TEXT_MASK.shape, *([1] * (array.ndim - 2)))
        return array * mask
    return array


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_outputs_match_transformers(converted, ep):
    case, reference, packages, folder = converted
    session = ort.InferenceSession(folder / ep / packages[ep].components[0].filename)
    feeds = INPUTS[case.inputs](case.config)
    feeds = {i.name: feeds[i.name] for i in session.get_inputs()}
    expected = reference_outputs(reference, feeds)
    names = [o.name for o in session.get_outputs()]
    diffs = {}
    for name, actual in zip(names, session.run(None, feeds), strict=True):
        want = getattr(expected, case.reference_names.get(name, name)).numpy()
        assert actual.shape == want.shape, name
        diffs[name] = float(np.abs(_masked(actual, case.inputs) - _masked(want, case.inputs)).max())
    print(ep, diffs)
    assert max(diffs.values()) <= TOLERANCE, diffs


def test_cpu_graph_runs_the_fused_kernels(converted):
    """Every attention the model declares in com.microsoft.MultiHeadAttention (none of the
    standard Attention op) and its norms fused with their residual adds, unless the package says
    why not. Convolutional families declare no attention."""
    package = converted[2]["cpu"]
    component = package.components[0]
    ops = [n.op_type for n in component.model.graph]
    fallbacks = [f for f in package.lowering.fallbacks if ENCODER_MHA in f]
    declared = expected_fusions(component.module, Plan(execution_provider("cpu", "f32")))
    assert ops.count("MultiHeadAttention") == (0 if fallbacks else declared[ENCODER_MHA])
    assert "Attention" not in ops or fallbacks
    assert ops.count("SkipLayerNormalization") == package.lowering.fusions.get("skip_norms")
