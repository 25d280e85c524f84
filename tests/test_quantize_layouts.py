"""A weight that two MatMuls read in different layouts (one through a Transpose, one as
stored) is quantized once per layout by the int4 and int8 passes: reusing one layout's codes
for the other would multiply by the wrong matrix, silently where the weight is square."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter.execution_providers import EXECUTION_PROVIDERS
from converter.lowering.int4 import Int4, quantize_matmuls
from converter.lowering.int8 import quantize_matmuls_int8
from converter.quantize import quantize_blocks
from converter.quantize_int8 import quantize_q8

SIZE = 32  # one int4 block per row
RNG = np.random.default_rng(3)
WEIGHT = RNG.standard_normal((SIZE, SIZE)).astype(np.float32)
X = RNG.standard_normal((2, SIZE)).astype(np.float32)


def _model() -> ir.Model:
    """y = (x @ W^T) @ W: W read [N, K] behind a Transpose, then [K, N] as stored."""
    nodes = [
        helper.make_node("Transpose", ["W"], ["Wt"], name="transpose", perm=[1, 0]),
        helper.make_node("MatMul", ["x", "Wt"], ["a"], name="first"),
        helper.make_node("MatMul", ["a", "W"], ["y"], name="second"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, SIZE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, SIZE])],
        [numpy_helper.from_array(WEIGHT, "W")],
    )
    return ir.from_proto(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))


def _run(model: ir.Model, tmp_path) -> np.ndarray:
    path = tmp_path / "model.onnx"
    ir.save(model, path)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": X})[0]


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_int4_quantizes_each_layout_of_a_shared_weight(ep, tmp_path):
    provider = dataclasses.replace(EXECUTION_PROVIDERS[ep], int4_accuracy_level=0)
    model = _model()
    assert quantize_matmuls(model, provider, Int4(), ir.DataType.FLOAT, {}, set()) == 2
    stored_nk = quantize_blocks(WEIGHT).dequantize()  # the first MatMul's [N, K] = W
    stored_kn = quantize_blocks(np.ascontiguousarray(WEIGHT.T)).dequantize()  # [N, K] = W^T
    expected = (X @ stored_nk.T) @ stored_kn.T
    np.testing.assert_allclose(_run(model, tmp_path), expected, rtol=1e-4, atol=1e-4)


def test_int8_quantizes_each_layout_of_a_shared_weight(tmp_path):
    model = _model()
    assert quantize_matmuls_int8(model, set()) == 2
    first = quantize_q8(WEIGHT).dequantize()
    second = quantize_q8(np.ascontiguousarray(WEIGHT.T)).dequantize()
    expected = (X @ first.T) @ second.T
    actual = _run(model, tmp_path)  # activations rounded to uint8 per tensor: a few percent
    assert np.abs(actual - expected).max() <= 0.05 * np.abs(expected).max()
