"""Every encoder-decoder family against transformers on the same random weights (f32), on the
portable `default` graph and the `cpu` graph with onnxruntime's fused kernels: the encoder
output of a padded batch of two (where its mask keeps it), and the logits of teacher-forced
decoder tokens run as the clients run them: the first FIRST tokens with empty caches and
use_cache_branch false, then one token per step with both caches fed back."""

from __future__ import annotations

import numpy as np
import pytest

from converter import build
from converter.execution_providers import ENCODER_MHA, MOE, execution_provider
from converter.lowering import Plan, expected_fusions
from converter.validate.seq2seq_runtime import OnnxSeq2Seq
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import (
    case_inputs,
    kept_positions,
    make_seq2seq,
    reference,
)

TOLERANCE = 1e-4
FIRST = 3  # decoder tokens of the uncached first step; the others come one per cached step


@pytest.fixture(scope="module", params=sorted(CASES))
def converted(request, tmp_path_factory):
    case_id = request.param
    case = CASES[case_id]
    folder = tmp_path_factory.mktemp(case_id.replace(":", "-"))
    model = make_seq2seq(case_id, case, folder / "hf")
    packages = {}
    for ep in ("default", "cpu"):
        packages[ep] = build(str(folder / "hf"), ep=ep, progress=False)
        packages[ep].save(folder / ep, progress=False)
    return case_id, case, model, packages, folder


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_encoder_and_cached_decoder_match_transformers(converted, ep):
    case_id, case, model, _, folder = converted
    feeds, ids = case_inputs(case_id, case, model)
    encoded, logits = reference(model, feeds, ids)
    runtime = OnnxSeq2Seq(folder / ep)
    kept = kept_positions(case, feeds)
    actual = runtime.encode(feeds)
    assert actual.shape == encoded.shape
    weights = 1 if kept is None else kept[..., None]
    diffs = {"encoder": float(np.abs((actual - encoded) * weights).max())}
    steps = runtime.run(feeds, ids, FIRST)
    assert len(steps) == 1 + ids.shape[1] - FIRST
    wanted = [logits[:, :FIRST], *(logits[:, i : i + 1] for i in range(FIRST, ids.shape[1]))]
    for i, (got, want) in enumerate(zip(steps, wanted, strict=True)):
        assert got.shape == want.shape, i
        diffs[f"step {i}"] = float(np.abs(got - want).max())
    print(ep, diffs)
    assert max(diffs.values()) <= TOLERANCE, diffs


def test_cpu_graphs_run_the_fused_kernels(converted):
    """Every attention (encoder self, decoder self with its cache, cross) in
    com.microsoft.MultiHeadAttention, as many as the modules declare, none in the standard
    Attention op, unless the model says why it cannot (a fallback: T5Gemma's softcap);
    mixtures of experts in com.microsoft.MoE as declared; the norms fused with their residual
    adds."""
    package = converted[3]["cpu"]
    plan = Plan(execution_provider("cpu", "f32"))
    fused_norms = 0
    for component in package.components:
        ops = [n.op_type for n in component.model.graph]
        declared = expected_fusions(component.module, plan)[ENCODER_MHA]
        if declared == 0:
            assert package.lowering.fallbacks, component.role
            assert "MultiHeadAttention" not in ops, component.role
        else:
            assert ops.count("MultiHeadAttention") == declared, component.role
            assert "Attention" not in ops, component.role
        assert ops.count(MOE) == expected_fusions(component.module, plan)[MOE], component.role
        fused_norms += ops.count("SkipLayerNormalization")
        fused_norms += ops.count("SkipSimplifiedLayerNormalization")
    assert fused_norms == package.lowering.fusions.get("skip_norms")
