"""Structural checks of EP variants against onnxruntime's published kernel sets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter.kernels import EPS, kernel_data, structural_report, unsupported_ops

F32, F16, BF16 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16
I32, I64, U8 = TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8
MS = "com.microsoft"


def one_node(
    op: str,
    inputs: list[tuple[str, int, list[int]]],
    outputs: list[tuple[str, int, list[int]]],
    *,
    domain: str = "",
    opset: int = 23,
    initializers: list[onnx.TensorProto] = (),
    **attrs: object,
) -> onnx.ModelProto:
    """A model with one node; inputs named "" are omitted optional inputs."""
    node = helper.make_node(op, [n for n, _, _ in inputs], [n for n, _, _ in outputs], **attrs)
    node.domain = domain
    inits = {t.name for t in initializers}
    graph = helper.make_graph(
        [node],
        op,
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs if n and n not in inits],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        list(initializers),
    )
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets)


def portable_graph() -> onnx.ModelProto:
    """Standard ops of a decoder block, float32, opset 23."""
    x = helper.make_tensor_value_info("x", F32, [2, 4])
    y = helper.make_tensor_value_info("y", F32, [8])
    inits = [
        numpy_helper.from_array(np.ones((4, 4), np.float32), "w"),
        numpy_helper.from_array(np.ones(4, np.float32), "b"),
        numpy_helper.from_array(np.array([8], np.int64), "shape"),
        numpy_helper.from_array(np.array([-1], np.int64), "axes"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["add"]),
        helper.make_node("Sigmoid", ["add"], ["sig"]),
        helper.make_node("Mul", ["add", "sig"], ["silu"]),
        helper.make_node("ReduceMean", ["silu", "axes"], ["mean"]),
        helper.make_node("Sub", ["silu", "mean"], ["centered"]),
        helper.make_node("Transpose", ["centered"], ["t"], perm=[1, 0]),
        helper.make_node("Reshape", ["t", "shape"], ["flat"]),
        helper.make_node("Softmax", ["flat"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(nodes, "portable", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def gqa(dtype: int) -> onnx.ModelProto:
    h, kv, d, s, p = 2, 1, 16, 3, 4
    return one_node(
        "GroupQueryAttention",
        [
            ("query", dtype, [1, s, h * d]),
            ("key", dtype, [1, s, kv * d]),
            ("value", dtype, [1, s, kv * d]),
            ("past_key", dtype, [1, kv, p, d]),
            ("past_value", dtype, [1, kv, p, d]),
            ("seqlens_k", I32, [1]),
            ("total_sequence_length", I32, []),
        ],
        [
            ("out", dtype, [1, s, h * d]),
            ("pk", dtype, [1, kv, p + s, d]),
            ("pv", dtype, [1, kv, p + s, d]),
        ],
        domain=MS,
        num_heads=h,
        kv_num_heads=kv,
    )


def matmul_nbits(dtype: int) -> onnx.ModelProto:
    k, n, block = 32, 8, 32
    inits = [
        numpy_helper.from_array(np.zeros((n, k // block, block // 2), np.uint8), "B"),
        helper.make_tensor("scales", dtype, [n * k // block], np.ones(n * k // block).tolist()),
    ]
    return one_node(
        "MatMulNBits",
        [("A", dtype, [2, k]), ("B", U8, [n, 1, 16]), ("scales", dtype, [n])],
        [("Y", dtype, [2, n])],
        domain=MS,
        initializers=inits,
        K=k,
        N=n,
        bits=4,
        block_size=block,
    )


def skip_simplified_ln(dtype: int) -> onnx.ModelProto:
    gamma = helper.make_tensor("gamma", dtype, [4], [1.0] * 4)
    return one_node(
        "SkipSimplifiedLayerNormalization",
        [("x", dtype, [2, 4]), ("skip", dtype, [2, 4]), ("gamma", dtype, [4])],
        [("y", dtype, [2, 4])],
        domain=MS,
        initializers=[gamma],
        epsilon=1e-6,
    )


def attention23(dtype: int = F32) -> onnx.ModelProto:
    shape = [1, 2, 3, 4]
    return one_node(
        "Attention",
        [("Q", dtype, shape), ("K", dtype, shape), ("V", dtype, shape)],
        [("Y", dtype, shape)],
    )


def rotary23(dtype: int = F32) -> onnx.ModelProto:
    return one_node(
        "RotaryEmbedding",
        [
            ("X", dtype, [1, 2, 3, 4]),
            ("cos", dtype, [8, 2]),
            ("sin", dtype, [8, 2]),
            ("pos", I64, [1, 3]),
        ],
        [("Y", dtype, [1, 2, 3, 4])],
    )


def rms_norm23(dtype: int = F32) -> onnx.ModelProto:
    return one_node(
        "RMSNormalization", [("X", dtype, [2, 4]), ("scale", dtype, [4])], [("Y", dtype, [2, 4])]
    )


def where(dtype: int) -> onnx.ModelProto:
    return one_node(
        "Where",
        [("c", TensorProto.BOOL, [2]), ("a", dtype, [2]), ("b", dtype, [2])],
        [("y", dtype, [2])],
    )


def matmul(dtype: int) -> onnx.ModelProto:
    return one_node("MatMul", [("a", dtype, [2, 4]), ("b", dtype, [4, 3])], [("y", dtype, [2, 3])])


# ------------------------------------------------------------------------------ the data


def test_data_records_its_source() -> None:
    source = kernel_data()["source"]
    assert len(source["commit"]) == 40
    assert source["files"]["cpu"] == "docs/OperatorKernels.md"
    assert "webgpu_execution_provider.cc" in source["files"]["webgpu"]
    assert all(kernel_data()[ep] for ep in EPS)


@pytest.mark.parametrize("ep", EPS)
def test_portable_graph_runs_everywhere(ep: str) -> None:
    assert unsupported_ops(portable_graph(), ep) == []


@pytest.mark.parametrize("ep", [*EPS, "CUDAExecutionProvider"])
def test_unknown_op_reported(ep: str) -> None:
    model = one_node("Nope", [("x", F32, [2])], [("y", F32, [2])], domain="com.example")
    (line,) = unsupported_ops(model, ep)
    assert "com.example::Nope" in line and "no " in line


def test_unknown_ep_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown execution provider"):
        unsupported_ops(portable_graph(), "tpu")


# ------------------------------------------------------------- fused com.microsoft ops


@pytest.mark.parametrize("ep", EPS)
@pytest.mark.parametrize("build", [gqa, matmul_nbits, skip_simplified_ln])
def test_fused_contrib_ops_f16_everywhere(ep: str, build) -> None:
    # GroupQueryAttention, MatMulNBits and SkipSimplifiedLayerNormalization: all four EPs
    # register them for float16.
    assert unsupported_ops(build(F16), ep) == []


def test_fused_contrib_op_dtypes() -> None:
    # CUDA's GroupQueryAttention takes float16/bfloat16 only; CPU's takes float/float16.
    (line,) = unsupported_ops(gqa(F32), "cuda")
    assert "does not take float" in line and "bfloat16, float16" in line
    assert line.endswith("falls back to CPU for it")
    assert unsupported_ops(gqa(F32), "cpu") == []
    assert unsupported_ops(gqa(BF16), "cuda") == []
    for ep in ("cpu", "dml", "webgpu"):
        assert unsupported_ops(gqa(BF16), ep), ep
    # bf16 MatMulNBits: CUDA only.
    assert unsupported_ops(matmul_nbits(BF16), "cuda") == []
    for ep in ("cpu", "dml", "webgpu"):
        assert unsupported_ops(matmul_nbits(BF16), ep), ep


# ------------------------------------------------------ standard opset-23 LLM ops


@pytest.mark.parametrize(
    ("build", "lacking"),
    [
        (attention23, {"dml", "webgpu"}),
        (rotary23, {"dml"}),
        (rms_norm23, {"dml"}),
    ],
)
def test_opset23_llm_ops(build, lacking: set[str]) -> None:
    for ep in EPS:
        lines = unsupported_ops(build(F32), ep)
        if ep in lacking:
            (line,) = lines
            assert f"no {ep} kernel" in line
            assert line.endswith("onnxruntime falls back to CPU for it")
        else:
            assert lines == [], ep
    # with no kernel anywhere (bf16 on CPU) onnxruntime may still inline the function body
    (line,) = unsupported_ops(build(BF16), "cpu")
    assert line.endswith("onnxruntime can inline its ONNX function body instead")


def test_opset23_llm_ops_f16_and_bf16() -> None:
    for build in (attention23, rotary23, rms_norm23):
        assert unsupported_ops(build(F16), "cpu") == []
        assert unsupported_ops(build(BF16), "cuda") == []
        assert unsupported_ops(build(BF16), "cpu")  # no bf16 on CPU
    assert unsupported_ops(rotary23(F16), "webgpu") == []
    assert unsupported_ops(rms_norm23(BF16), "webgpu")


def test_dequantize_linear_int4_blocked() -> None:
    # opset 21 is the first with block_size; int4 input from there on
    model = one_node(
        "DequantizeLinear",
        [("x", TensorProto.INT4, [4, 32]), ("scale", F16, [4, 1])],
        [("y", F16, [4, 32])],
        opset=21,
        axis=1,
        block_size=32,
    )
    for ep in EPS:
        assert unsupported_ops(model, ep) == [], ep


# ----------------------------------------------------------------- element types


def test_bf16_matmul_on_cpu_reported() -> None:
    (line,) = unsupported_ops(matmul(BF16), "cpu")
    assert "MatMul" in line and "does not take bfloat16" in line
    assert not line.endswith("instead")  # MatMul has no function body
    assert unsupported_ops(matmul(BF16), "cuda") == []
    assert unsupported_ops(matmul(F16), "cpu") == []


def test_where_checks_its_data_input_not_the_condition() -> None:
    (line,) = unsupported_ops(where(BF16), "cpu")
    assert "does not take bfloat16 (input 1;" in line
    assert unsupported_ops(where(F32), "cpu") == []


def test_types_from_onnx_ir_model() -> None:
    model = ir.from_proto(matmul(BF16))
    assert unsupported_ops(model, "cpu")
    assert unsupported_ops(model, "cuda") == []


def test_constant_needs_no_kernel() -> None:
    node = helper.make_node("Constant", [], ["y"], value_float=1.0)
    graph = helper.make_graph([node], "c", [], [helper.make_tensor_value_info("y", F32, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    assert unsupported_ops(model, "webgpu") == []


def test_old_kernel_range_does_not_cover_a_newer_opset() -> None:
    lines = unsupported_ops(attention23(), "webgpu")
    assert lines and "opset 23" in lines[0]
    # CPU registers Attention for 23 and 24+: a model at opset 25 resolves to Attention-24.
    model = attention23()
    model.opset_import[0].version = 25
    assert unsupported_ops(model, "cpu") == []


# -------------------------------------------------------------------- the report


def test_report_for_valid_model_on_disk_with_external_data(tmp_path: Path) -> None:
    model = portable_graph()
    path = tmp_path / "model.onnx"
    onnx.save(model, path, save_as_external_data=True, location="model.onnx.data", size_threshold=0)
    assert (tmp_path / "model.onnx.data").exists()
    report = structural_report(path, "cuda")
    assert report == {
        "ep": "cuda",
        "checker": "ok",
        "unsupported_ops": [],
        "executed": False,
        "status": "not executed (structural check only)",
    }


def test_report_lists_unsupported_ops() -> None:
    report = structural_report(ir.from_proto(attention23()), "dml")
    assert report["checker"] == "ok" and report["executed"] is False
    assert len(report["unsupported_ops"]) == 1
    assert report["status"] == "not executed (structural check only)"


def test_report_for_invalid_model() -> None:
    model = portable_graph()
    model.graph.node[1].input[0] = "missing"
    report = structural_report(model, "webgpu")
    assert report["checker"] != "ok" and "missing" in report["checker"]
    assert report["status"].startswith("structurally invalid: ")
    assert report["executed"] is False


# ------------------------------------- the data agrees with the installed CPU build


def cpu_session(model: onnx.ModelProto, tmp_path: Path) -> onnx.ModelProto:
    """Create a CPU session without graph rewrites; return the graph onnxruntime kept."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.optimized_model_filepath = str(tmp_path / "kept.onnx")
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return onnx.load(tmp_path / "kept.onnx")


@pytest.mark.parametrize(
    "model",
    [
        attention23(),
        attention23(F16),
        rotary23(),
        rms_norm23(),
        where(F32),
        gqa(F16),
        matmul_nbits(F32),
        skip_simplified_ln(F16),
    ],
    ids=lambda m: f"{m.graph.node[0].op_type}-{m.graph.input[0].type.tensor_type.elem_type}",
)
def test_cpu_kernels_the_data_lists_exist(model: onnx.ModelProto, tmp_path: Path) -> None:
    assert unsupported_ops(model, "cpu") == []
    kept = cpu_session(model, tmp_path)
    # the node ran as itself, not as an inlined function body
    assert [n.op_type for n in kept.graph.node] == [model.graph.node[0].op_type]


def test_attention23_runs_on_cpu() -> None:
    session = ort.InferenceSession(
        attention23().SerializeToString(), providers=["CPUExecutionProvider"]
    )
    q = np.random.default_rng(0).standard_normal((1, 2, 3, 4)).astype(np.float32)
    (y,) = session.run(None, {"Q": q, "K": q, "V": q})
    assert y.shape == (1, 2, 3, 4)


@pytest.mark.parametrize(
    "model",
    [where(BF16), matmul(BF16), gqa(BF16), matmul_nbits(BF16)],
    ids=["Where-bf16", "MatMul-bf16", "GQA-bf16", "MatMulNBits-bf16"],
)
def test_cpu_kernels_the_data_lacks_are_missing(model: onnx.ModelProto, tmp_path: Path) -> None:
    assert unsupported_ops(model, "cpu")
    with pytest.raises(Exception, match=r"(?i)implementation|not implemented"):
        cpu_session(model, tmp_path)


def test_cpu_runs_float16_without_kernel_in_float(tmp_path: Path) -> None:
    # CPU registers no float16 Where; onnxruntime casts around it instead of failing.
    assert "float16" not in kernel_data()["cpu"]["ai.onnx::Where"][0][2]
    assert unsupported_ops(where(F16), "cpu") == []
    assert [n.op_type for n in cpu_session(where(F16), tmp_path).graph.node].count("Cast") == 3
    assert unsupported_ops(where(F16), "cuda") == []
