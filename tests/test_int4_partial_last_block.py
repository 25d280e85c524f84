"""int4 where the input size is not a multiple of the block size (96 wide, blocks of 64): the
partial last block is quantized and read back by every int4 kernel, MatMulNBits (cpu),
DequantizeLinear (default) and GatherBlockQuantized (cpu, --int4-head-bits 4), so the graph equals
transformers with each quantized weight replaced by its dequantized value, with either int4 method
(round-to-nearest or the scale search).

Both sides run with float32 activations (the cpu record's int8 accuracy level and onnxruntime's
DequantizeLinear + MatMul fusion are turned off), which makes the comparison exact up to
summation order.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnxruntime as ort
import pytest

from converter import build
from converter.execution_providers import EXECUTION_PROVIDERS
from converter.validate.reference import TransformersReference
from converter.validate.runtime import OnnxDecoder
from tests.parity.reference import make_checkpoint
from tests.quantized_reference import dequantized_copy

BLOCK = 64
WIDTH = 96  # hidden and intermediate size: one whole block and one of 32 values
TOLERANCE = 1e-4
RNG = np.random.default_rng(5)
PROMPT = RNG.integers(3, 128, size=(1, 7))
STEPS = [RNG.integers(3, 128, size=(1, 1)) for _ in range(2)]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("partial-block")
    reference = make_checkpoint(
        "llama", folder / "hf", hidden_size=WIDTH, intermediate_size=WIDTH, head_dim=24
    )
    return folder, reference


@pytest.fixture
def exact_cpu_int4(monkeypatch):
    cpu = dataclasses.replace(EXECUTION_PROVIDERS["cpu"], int4_accuracy_level=0)
    monkeypatch.setitem(EXECUTION_PROVIDERS, "cpu", cpu)


def _run_unfused(package_dir) -> list[np.ndarray]:
    decoder = OnnxDecoder(package_dir)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    decoder.session = ort.InferenceSession(
        str(package_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    return decoder.run(PROMPT, np.ones_like(PROMPT), STEPS)


@pytest.mark.usefixtures("exact_cpu_int4")
@pytest.mark.parametrize("method", ["rtn", "search"])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize(
    ("ep", "lm_head", "kernels"),
    [
        ("default", False, {"DequantizeLinear"}),
        ("cpu", True, {"MatMulNBits", "GatherBlockQuantized"}),
    ],
)
def test_partial_last_block_is_exact(model, ep, lm_head, kernels, symmetric, method):
    folder, reference = model
    package = build(
        str(folder / "hf"),
        ep=ep,
        dtype="int4",
        int4_block_size=BLOCK,
        int4_symmetric=symmetric,
        int4_head_bits=4 if lm_head else None,
        int4_method=method,
        progress=False,
    )
    assert kernels <= {n.op_type for n in package.model.graph}
    out = folder / f"{ep}-{symmetric}-{method}"
    package.save(out, progress=False)
    head_bits = 4 if lm_head else None
    dequantized = dequantized_copy(reference, BLOCK, symmetric, head_bits, method=method)
    expected = TransformersReference(dequantized).run(PROMPT, np.ones_like(PROMPT), STEPS)
    diffs = [float(np.abs(e - a).max()) for e, a in zip(expected, _run_unfused(out), strict=True)]
    print(f"{ep} symmetric={symmetric} {method}: max abs diff per call {diffs}")
    assert max(diffs) <= TOLERANCE
