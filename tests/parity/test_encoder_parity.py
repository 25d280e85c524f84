"""Every encoder family against transformers on the same random weights (f32), on the portable
`default` graph and the `cpu` graph with onnxruntime's fused encoder kernels, for each head the
case names: a batch of two whose second row is padded, every output compared on the positions
the mask keeps. Every component of the package is checked (a two-tower model's combined,
text and vision graphs)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from converter import build
from converter.execution_providers import ENCODER_MHA, execution_provider
from converter.lowering import Plan, expected_fusions
from converter.validate.encoding import reference_names
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import (
    case_inputs,
    kept_positions,
    make_encoder,
    reference_outputs,
)

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


def _masked(array: np.ndarray, kept: np.ndarray | None) -> np.ndarray:
    """Zero the padded positions of outputs that have a sequence (or frame) axis."""
    if kept is not None and array.ndim >= 2 and array.shape[:2] == kept.shape:
        return array * kept.reshape(*kept.shape, *([1] * (array.ndim - 2)))
    return array


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_outputs_match_transformers(converted, ep):
    case, reference, packages, folder = converted
    inputs = case_inputs(case)
    diffs = {}
    for component in packages[ep].components:
        session = ort.InferenceSession(folder / ep / component.filename)
        feeds = {i.name: inputs[i.name] for i in session.get_inputs()}
        expected = reference_outputs(reference, feeds, component.role)
        kept = kept_positions(reference, case.inputs, feeds)
        names = [o.name for o in session.get_outputs()]
        for name, actual in zip(names, session.run(None, feeds), strict=True):
            want = getattr(expected, reference_names(case.config).get(name, name)).numpy()
            assert actual.shape == want.shape, (component.filename, name)
            diff = float(np.abs(_masked(actual, kept) - _masked(want, kept)).max())
            diffs[f"{component.filename}:{name}"] = diff
    print(ep, diffs)
    assert max(diffs.values()) <= TOLERANCE, diffs


def test_cpu_graph_runs_the_fused_kernels(converted):
    """Every attention each graph's model declares in com.microsoft.MultiHeadAttention (none of
    the standard Attention op) and its norms fused with their residual adds, unless the package
    says why not."""
    package = converted[2]["cpu"]
    fallbacks = [f for f in package.lowering.fallbacks if ENCODER_MHA in f]
    plan = Plan(execution_provider("cpu", "f32"))
    fused_norms = 0
    for component in package.components:
        ops = [n.op_type for n in component.model.graph]
        declared = expected_fusions(component.module, plan)[ENCODER_MHA]
        assert ops.count("MultiHeadAttention") == (0 if fallbacks else declared), component.role
        assert "Attention" not in ops or fallbacks
        fused_norms += ops.count("SkipLayerNormalization")
        fused_norms += ops.count("SkipSimplifiedLayerNormalization")
    assert fused_norms == package.lowering.fusions.get("skip_norms")
