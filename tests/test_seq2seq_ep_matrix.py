"""Every encoder-decoder family x EP x dtype: built, fused as its EP expects, and run or
checked, as tests/test_ep_matrix.py does for the decoders (f32 parity is in
tests/parity/test_seq2seq_parity.py). On the CPU host f16 runs against transformers in f32, and
int8 and int4 against transformers with each quantized weight replaced by its dequantized
value, so what is left is onnxruntime's int8 activations (MatMulInteger's, and MatMulNBits' at
accuracy level 4, which its CPU session makes of the default graph's DequantizeLinear + MatMul);
GPU EPs are built and checked structurally."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from converter import build
from converter.execution_providers import ENCODER_MHA
from converter.kernels import structural_report
from converter.validate.reference import TransformersSeq2Seq
from converter.validate.seq2seq_runtime import OnnxSeq2Seq
from tests.parity.cases import is_base
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import case_inputs, make_seq2seq
from tests.quantized_reference import dequantized_copy, int8_dequantized_copy
from tests.test_ep_matrix import BOUNDS, QUANTIZED_OP

FAMILIES = sorted(c for c in CASES if is_base(c))
FIRST = 2  # decoder tokens of the uncached step; the others one per cached step


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory):
    case = CASES[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    model = make_seq2seq(request.param, case, folder / "hf")
    feeds, ids = case_inputs(request.param, case, model)
    references = {
        dtype: np.concatenate(TransformersSeq2Seq(copy).run(feeds, ids, FIRST), axis=1)
        for dtype, copy in (
            ("f16", model),
            ("int8", int8_dequantized_copy(model)),
            ("int4", dequantized_copy(model)),
        )
    }
    return folder, feeds, ids, references


def _build(folder: Path, ep: str, dtype: str) -> Path:
    out = folder / f"{ep}-{dtype}"
    if not out.exists():
        build(str(folder / "hf"), ep=ep, dtype=dtype, progress=False).save(out, progress=False)
    return out


def _graphs(package: Path) -> list[Path]:
    manifest = json.loads((package / "mobius.json").read_text())
    return [package / c["filename"] for c in manifest["components"]]


@pytest.mark.parametrize(("ep", "dtype"), [("cpu", "f16"), ("cpu", "int8"), ("default", "int4")])
def test_runs_on_cpu_within_bounds(family, ep, dtype):
    folder, feeds, ids, references = family
    actual = np.concatenate(OnnxSeq2Seq(_build(folder, ep, dtype)).run(feeds, ids, FIRST), 1)
    if "num_experts" in json.loads((folder / "hf" / "config.json").read_text()):
        # as tests/test_ep_matrix.py: an expert picked from near-tied router scores on random
        # weights flips under quantized or f16 activations (Switch's decoder: a 0.016 margin
        # flips on default int4); f32 parity is in tests/parity, capacity in
        # tests/test_switch_transformers.py
        assert np.isfinite(actual).all()
        return
    e = references[dtype].reshape(-1, actual.shape[-1]).astype(np.float64)
    a = actual.reshape(e.shape).astype(np.float64)
    cosine = float(((e * a).sum(1) / np.linalg.norm(e, axis=1) / np.linalg.norm(a, axis=1)).min())
    relative = float(np.abs(e - a).max() / np.abs(e).max())
    top1 = float((e.argmax(1) == a.argmax(1)).mean())
    print(f"{ep}/{dtype}: min cosine {cosine:.6f}, max rel diff {relative:.4f}, top-1 {top1:.2f}")
    bounds = BOUNDS[dtype]
    assert cosine >= bounds["cosine"] and relative <= bounds["relative"]
    assert top1 >= bounds["top1"]


INLINED = "onnxruntime can inline its ONNX function body instead"


def test_default_graphs_are_portable(family):
    for graph in _graphs(_build(family[0], "default", "int4")):
        model = onnx.load(graph, load_external_data=False)
        assert {n.domain for n in model.graph.node} <= {"", "ai.onnx"}
        # a standard op without a kernel that onnxruntime inlines (Moonshine's one-group
        # GroupNormalization) still runs everywhere
        kernel_less = structural_report(graph, "cpu")["unsupported_ops"]
        assert not [line for line in kernel_less if not line.endswith(INLINED)]


@pytest.mark.parametrize("dtype", ["int8", "int4"])
def test_cpu_fusions_are_counted_and_recorded(family, dtype):
    package = _build(family[0], "cpu", dtype)
    lowering = json.loads((package / "mobius.json").read_text())["lowering"]
    fusions = lowering["fusions"]
    ops = [n.op_type for graph in _graphs(package) for n in onnx.load(graph).graph.node]
    assert ops.count("MultiHeadAttention") == fusions.get(ENCODER_MHA, 0)
    if not fusions.get(ENCODER_MHA):  # only where the model records why (T5Gemma's softcap)
        assert lowering["fallbacks"]
    assert ops.count(QUANTIZED_OP[dtype]) == fusions[f"{dtype}_matmuls"] > 0
    skip_norms = ops.count("SkipLayerNormalization") + ops.count("SkipSimplifiedLayerNormalization")
    assert skip_norms == fusions["skip_norms"] > 0  # (Simplified: RMS norms, T5's)


@pytest.mark.parametrize(
    ("ep", "dtype"), [("cuda", "f16"), ("cuda", "int4"), ("dml", "f16"), ("webgpu", "int4")]
)
def test_gpu_variants_are_checked_structurally_not_executed(family, ep, dtype):
    for graph in _graphs(_build(family[0], ep, dtype)):
        report = structural_report(graph, ep)
        assert report["checker"] == "ok", report["checker"]
        assert report["executed"] is False
