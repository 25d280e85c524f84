"""Block-wise 4-bit quantization: RTN's round-trip bounds, the scale search never reconstructing
a block worse than RTN, and onnxruntime agreeing with numpy's dequantize() (either method) through
both MatMulNBits and the standard DequantizeLinear + MatMul.

Tolerances. With accuracy_level 0 the CPU kernel dequantizes to exactly the float32 values
dequantize() returns and accumulates in float32, so the only difference from numpy is the
summation order over K: each output is compared with rtol 1e-5 plus an atol of 1e-5 x the
largest output (summation error scales with the magnitudes summed, not with the result, which
can be near zero). f16 activations: the output is rounded to f16 (2^-11 relative), so 1e-3.
accuracy_level 4 quantizes the activations to int8 per block, a different computation: it is
checked against a 1e-2 relative Frobenius-norm error.
"""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import quantize
from converter.errors import MobiusError
from converter.lowering import Int4
from converter.quantize import BlockWeight, quantize_blocks, to_dequantize_linear

SHAPES = [(1, 32), (1, 100), (7, 64), (16, 130), (33, 257), (5, 1000)]
BLOCKS = [16, 32, 64, 128]


def random_weight(shape: tuple[int, int], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.01, 3.0, size=(shape[0], 1))  # rows of different magnitudes
    offset = rng.uniform(-0.5, 0.5, size=(shape[0], 1))  # and not centred, for asymmetric
    return (rng.standard_normal(shape) * scale + offset).astype(np.float32)


def block_scales(q: BlockWeight) -> np.ndarray:
    """Each value's block scale, [N, K]."""
    return np.repeat(q.scales, q.block_size, axis=1)[:, : q.k]


def error_bound(q: BlockWeight) -> np.ndarray:
    """How far each value may be from its reconstruction: half a step (asymmetric); a step
    (symmetric: the extreme's side is within half a step, the other side has one level fewer,
    so a value beyond it is clipped by up to a step)."""
    return np.abs(block_scales(q)) * ((0.5 if q.zero_points is not None else 1.0) + 1e-5)


def assert_extremes_on_code_zero(q: BlockWeight, w: np.ndarray) -> None:
    """Symmetric blocks put their value of largest magnitude exactly on code 0."""
    padded = np.zeros((q.n, q.n_blocks * q.block_size), np.float32)
    padded[:, : q.k] = w
    blocks = padded.reshape(q.n, q.n_blocks, q.block_size)
    at = np.abs(blocks).argmax(axis=-1)[..., None]
    extremes = np.take_along_axis(q.codes(), at, axis=-1)[..., 0]
    assert np.all(extremes[q.scales != 0] == 0)


# -- round trip --------------------------------------------------------------------------------


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("block_size", BLOCKS)
@pytest.mark.parametrize("shape", SHAPES)
def test_round_trip_within_half_step(shape, block_size, symmetric):
    w = random_weight(shape)
    q = quantize_blocks(w, block_size, symmetric)
    n, k = shape
    n_blocks = -(-k // block_size)
    assert q.packed.shape == (n, n_blocks, block_size // 2) and q.packed.dtype == np.uint8
    assert q.scales.shape == (n, n_blocks) and q.scales.dtype == np.float32
    assert (q.k, q.block_size) == (k, block_size)
    if symmetric:
        assert q.zero_points is None
        assert_extremes_on_code_zero(q, w)  # all 16 levels: -8..7 around 8
    else:
        assert q.zero_points.shape == (n, -(-n_blocks // 2)) and q.zero_points.dtype == np.uint8
    restored = q.dequantize()
    assert restored.shape == (n, k) and restored.dtype == np.float32
    assert np.all(np.abs(restored - w) <= error_bound(q))
    # Padding is zeros, which both schemes represent exactly.
    padded = (q.codes().astype(np.int16) - q.zero_point_codes()[..., None]).reshape(n, -1)
    assert np.all(padded[:, k:] == 0)


@pytest.mark.parametrize("symmetric", [True, False])
def test_zero_and_constant_rows(symmetric):
    w = random_weight((6, 96))
    w[1] = 0.0
    w[2] = 1.5
    w[3] = -0.25
    w[4, :32] = 0.0  # one zero block in an otherwise random row
    q = quantize_blocks(w, 32, symmetric)
    restored = q.dequantize()
    assert np.isfinite(q.scales).all() and np.isfinite(restored).all()
    assert np.all(restored[1] == 0) and np.all(q.scales[1] == 0)
    assert np.all(restored[4, :32] == 0)
    np.testing.assert_allclose(restored[2], 1.5, rtol=1e-6)
    np.testing.assert_allclose(restored[3], -0.25, rtol=1e-6)


def test_all_zero_weight_and_f16_scales():
    q = quantize_blocks(np.zeros((3, 40), np.float32), 16, symmetric=False)
    assert np.all(q.dequantize(scale_dtype=np.float16) == 0)


@pytest.mark.parametrize("symmetric", [True, False])
def test_deterministic_and_chunk_independent(symmetric, monkeypatch):
    w = random_weight((37, 200), seed=3)
    first, second = quantize_blocks(w, 32, symmetric), quantize_blocks(w, 32, symmetric)
    monkeypatch.setattr(quantize, "_CHUNK_VALUES", 300)  # one row per chunk
    chunked = quantize_blocks(w, 32, symmetric)
    for other in (second, chunked):
        np.testing.assert_array_equal(first.packed, other.packed)
        np.testing.assert_array_equal(first.scales, other.scales)
        if not symmetric:
            np.testing.assert_array_equal(first.zero_points, other.zero_points)


def test_half_precision_inputs_match_float32():
    w = random_weight((8, 72)).astype(np.float16)  # K padded to 96
    for dtype in (np.float16, ml_dtypes.bfloat16):
        low = w.astype(dtype)
        expected = quantize_blocks(low.astype(np.float32), 32, symmetric=False)
        got = quantize_blocks(low, 32, symmetric=False)
        np.testing.assert_array_equal(got.packed, expected.packed)
        np.testing.assert_array_equal(got.scales, expected.scales)


def test_nibble_order():
    w = np.zeros((1, 16), np.float32)
    w[0, :3] = [-8.0, 7.0, 1.0]  # scale -8 / -8 = 1: codes 0, 15, 9, then 8s
    q = quantize_blocks(w, 16)
    assert q.scales[0, 0] == 1.0
    assert q.packed[0, 0].tolist() == [0xF0, 0x89] + [0x88] * 6
    w[0, :3] = [8.0, -7.0, 1.0]  # a positive extreme: scale -1, codes 0, 15, 7
    q = quantize_blocks(w, 16)
    assert q.scales[0, 0] == -1.0
    assert q.packed[0, 0].tolist() == [0xF0, 0x87] + [0x88] * 6
    w = np.zeros((1, 48), np.float32)
    w[0, 16:32] = 1.0  # asymmetric blocks: zero points 0 (block 1) and 15 (block 2)
    w[0, 32:48] = -1.0
    q = quantize_blocks(w, 16, symmetric=False)
    assert q.zero_point_codes()[0].tolist() == [0, 0, 15]
    assert q.zero_points[0].tolist() == [0x00, 0x0F]


@pytest.mark.parametrize(
    "weight", [np.zeros(32, np.float32), np.zeros((0, 32), np.float32), np.zeros((2, 32), int)]
)
def test_rejects_bad_weights(weight):
    with pytest.raises(ValueError):
        quantize_blocks(weight)


def test_rejects_bad_block_size_and_non_finite():
    with pytest.raises(ValueError, match="block_size"):
        quantize_blocks(np.zeros((2, 64), np.float32), block_size=48)
    w = np.ones((2, 64), np.float32)
    w[1, 5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        quantize_blocks(w)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("shape", [(5, 64), (9, 100)])
def test_dequantize_linear_form(shape, symmetric):
    q = quantize_blocks(random_weight(shape), 32, symmetric)
    values, scales, zero_points = to_dequantize_linear(q)
    k, n = shape[1], shape[0]
    n_blocks = -(-k // 32)
    assert values.shape == (k, n) and scales.shape == (n_blocks, n)
    assert values.dtype == (ml_dtypes.int4 if symmetric else ml_dtypes.uint4)
    if symmetric:
        assert zero_points is None
        centered = values.astype(np.float32)
    else:
        assert zero_points.shape == (n_blocks, n) and zero_points.dtype == ml_dtypes.uint4
        centered = values.astype(np.float32) - np.repeat(zero_points, 32, axis=0)[:k]
    restored = centered * np.repeat(scales, 32, axis=0)[:k]
    np.testing.assert_array_equal(restored, q.dequantize().T)


# -- onnxruntime -------------------------------------------------------------------------------

ONNX_DTYPE = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}


def run_model(
    nodes: list[onnx.NodeProto],
    initializers: list[onnx.TensorProto],
    x: np.ndarray,
    n: int,
    options: ort.SessionOptions | None = None,
) -> np.ndarray:
    elem = ONNX_DTYPE[x.dtype.type]
    graph = helper.make_graph(
        nodes,
        "q4",
        [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info("y", elem, [*x.shape[:-1], n])],
        initializers,
    )
    opsets = [helper.make_opsetid("", 23), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, {"x": x})[0]


def matmul_nbits(x: np.ndarray, q: BlockWeight, accuracy_level: int) -> np.ndarray:
    arrays = {"B": q.packed, "scales": q.scales.astype(x.dtype), "zero_points": q.zero_points}
    inputs = [name for name, array in arrays.items() if array is not None]
    node = helper.make_node(
        "MatMulNBits",
        ["x", *inputs],
        ["y"],
        domain="com.microsoft",
        K=q.k,
        N=q.n,
        bits=q.bits,
        block_size=q.block_size,
        accuracy_level=accuracy_level,
    )
    initializers = [numpy_helper.from_array(arrays[name], name) for name in inputs]
    return run_model([node], initializers, x, q.n)


def dq_matmul(x: np.ndarray, q: BlockWeight, options: ort.SessionOptions | None) -> np.ndarray:
    values, scales, zero_points = to_dequantize_linear(q)
    arrays = {"values": values, "scales": scales.astype(x.dtype), "zero_points": zero_points}
    inputs = [name for name, array in arrays.items() if array is not None]
    nodes = [
        helper.make_node(
            "DequantizeLinear",
            inputs,
            ["w"],
            axis=quantize.DEQUANTIZE_LINEAR_AXIS,
            block_size=q.block_size,
        ),
        helper.make_node("MatMul", ["x", "w"], ["y"]),
    ]
    # onnx_ir packs ml_dtypes int4/uint4 arrays into INT4/UINT4 tensors.
    initializers = [
        ir.serde.serialize_tensor(ir.Tensor(arrays[name], name=name)) for name in inputs
    ]
    return run_model(nodes, initializers, x, q.n, options)


def activations(k: int, dtype: type = np.float32, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((2, 3, k)).astype(dtype)


def assert_close(actual: np.ndarray, expected: np.ndarray, tol: float) -> None:
    actual = actual.astype(np.float32)
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol * np.abs(expected).max())


def assert_relative_error(actual: np.ndarray, expected: np.ndarray, tol: float) -> None:
    error = np.linalg.norm(actual.astype(np.float32) - expected) / np.linalg.norm(expected)
    assert error <= tol, error


ORT_CASES = [(48, 128, 32), (48, 100, 32), (24, 256, 16), (17, 200, 64), (40, 384, 128)]


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize(("n", "k", "block_size"), ORT_CASES)
@pytest.mark.parametrize("method", quantize.METHODS)
def test_matmul_nbits_equals_numpy(n, k, block_size, symmetric, method):
    q = quantize_blocks(random_weight((n, k)), block_size, symmetric, method=method)
    x = activations(k)
    expected = x @ q.dequantize().T
    assert_close(matmul_nbits(x, q, accuracy_level=0), expected, 1e-5)
    assert_relative_error(matmul_nbits(x, q, accuracy_level=4), expected, 1e-2)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize(("n", "k", "block_size"), ORT_CASES)
def test_matmul_nbits_f16_equals_numpy(n, k, block_size, symmetric):
    q = quantize_blocks(random_weight((n, k)), block_size, symmetric)
    x = activations(k, np.float16)
    expected = x.astype(np.float32) @ q.dequantize(scale_dtype=np.float16).T
    assert_close(matmul_nbits(x, q, accuracy_level=0), expected, 1e-3)


def fused_options(path: str, accuracy_level: int | None) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.optimized_model_filepath = path
    options.log_severity_level = 3
    if accuracy_level is not None:
        key = "session.qdq_matmulnbits_accuracy_level"
        options.add_session_config_entry(key, str(accuracy_level))
    return options


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize(("n", "k", "block_size"), ORT_CASES)
@pytest.mark.parametrize("method", quantize.METHODS)
def test_dequantize_linear_matmul_equals_numpy(n, k, block_size, symmetric, method, tmp_path):
    q = quantize_blocks(random_weight((n, k)), block_size, symmetric, method=method)
    x = activations(k)
    expected = x @ q.dequantize().T
    # Unoptimized: onnxruntime's CPU DequantizeLinear (blocked, INT4/UINT4) then MatMul.
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert_close(dq_matmul(x, q, plain), expected, 1e-5)
    # Optimized: the session fuses DequantizeLinear + MatMul into MatMulNBits, with the
    # accuracy level from the session config (4, int8 activations, unless set).
    for accuracy_level, check in ((0, assert_close), (None, assert_relative_error)):
        path = str(tmp_path / f"fused-{accuracy_level}.onnx")
        tol = 1e-5 if accuracy_level == 0 else 1e-2
        check(dq_matmul(x, q, fused_options(path, accuracy_level)), expected, tol)
        fused = onnx.load(path).graph.node
        assert [node.op_type for node in fused] == ["MatMulNBits"]
        attributes = {a.name: helper.get_attribute_value(a) for a in fused[0].attribute}
        assert attributes["accuracy_level"] == (4 if accuracy_level is None else accuracy_level)


@pytest.mark.parametrize("symmetric", [True, False])
def test_dequantize_linear_matmul_f16(symmetric):
    q = quantize_blocks(random_weight((48, 100)), 32, symmetric)
    x = activations(100, np.float16)
    expected = x.astype(np.float32) @ q.dequantize(scale_dtype=np.float16).T
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    # DequantizeLinear rounds each weight to f16 and MatMul runs in f16: a few f16 ulps.
    assert_close(dq_matmul(x, q, plain), expected, 2e-3)


# -- speed (printed, not asserted) ---------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4864, 896), (151936, 896)])
def test_speed_report(shape):
    w = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    repeats = 5 if w.size < 10**7 else 1  # best of a few: the machine is shared
    for symmetric in (True, False):
        seconds = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            quantize_blocks(w, 32, symmetric)
            seconds = min(seconds, time.perf_counter() - start)
        kind = "sym" if symmetric else "asym"
        print(f"quantize {shape} {kind}: {seconds:.3f} s, {w.nbytes / seconds / 1e6:.0f} MB/s")


# -- the scale search ----------------------------------------------------------------------------


def block_errors(w: np.ndarray, q: BlockWeight) -> np.ndarray:
    """Squared reconstruction error per block, [N, n_blocks]."""
    error = np.zeros((q.n, q.n_blocks * q.block_size), np.float64)
    error[:, : q.k] = (q.dequantize().astype(np.float64) - w) ** 2
    return error.reshape(q.n, q.n_blocks, q.block_size).sum(axis=-1)


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("block_size", BLOCKS)
@pytest.mark.parametrize("heavy_tailed", [False, True])
def test_search_never_reconstructs_a_block_worse_than_rtn(
    heavy_tailed, block_size, symmetric, bits
):
    rng = np.random.default_rng(block_size + bits)
    w = random_weight((40, 300), seed=bits)
    if heavy_tailed:  # Student-t, 3 degrees of freedom: a few large values per block
        w = w * rng.standard_t(3, size=w.shape).astype(np.float32)
    rtn = quantize_blocks(w, block_size, symmetric, bits, "rtn")
    search = quantize_blocks(w, block_size, symmetric, bits, "search")
    rtn_error, search_error = block_errors(w, rtn), block_errors(w, search)
    # (1e-4: the float32 rounding of the least-squares refit, at 8 bits where RTN is near best)
    assert np.all(search_error <= rtn_error * (1 + 1e-4) + 1e-30)
    gain = 0.97 if bits == 4 else 1.0  # and better overall (4 bits: by 3% or more)
    assert search_error.sum() < gain * rtn_error.sum()
    # RTN's encoding: the same zero points, codes in range, padding still exactly zero
    np.testing.assert_array_equal(search.zero_point_codes(), rtn.zero_point_codes())
    assert search.codes().max() <= (1 << bits) - 1 and search.packed.shape == rtn.packed.shape
    assert np.isfinite(search.scales).all()
    centered = search.codes().astype(np.int16) - search.zero_point_codes()[..., None]
    assert np.all(centered.reshape(40, -1)[:, 300:] == 0)


@pytest.mark.parametrize("symmetric", [True, False])
def test_search_keeps_zero_and_constant_blocks(symmetric):
    w = random_weight((4, 96))
    w[1] = 0.0
    w[2] = 1.5
    w[3, :32] = 0.0
    restored = quantize_blocks(w, 32, symmetric, method="search").dequantize()
    assert np.all(restored[1] == 0) and np.all(restored[3, :32] == 0)
    np.testing.assert_allclose(restored[2], 1.5, rtol=1e-6)


def test_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        quantize_blocks(random_weight((2, 32)), method="gptq")
    with pytest.raises(MobiusError, match="int4 method 'gptq'"):
        Int4(method="gptq")


# -- 8 bits (int4 builds' LM head and token table) ----------------------------------------------


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize(("n", "k", "block_size"), ORT_CASES)
def test_8_bit_blocks_round_trip_and_run_in_onnxruntime(n, k, block_size, symmetric):
    w = random_weight((n, k))
    q = quantize_blocks(w, block_size, symmetric, bits=8)
    n_blocks = -(-k // block_size)
    assert q.packed.shape == (n, n_blocks, block_size) and q.bits == 8
    restored = q.dequantize()
    assert np.all(np.abs(restored - w) <= error_bound(q))
    four = quantize_blocks(w, block_size, symmetric)
    assert np.abs(restored - w).max() < np.abs(four.dequantize() - w).max() / 8
    if symmetric:
        assert q.zero_points is None  # -128..127 around 128
        assert_extremes_on_code_zero(q, w)
    else:
        assert q.zero_points.shape == (n, n_blocks)
    x = activations(k)
    expected = x @ restored.T
    assert_close(matmul_nbits(x, q, accuracy_level=0), expected, 1e-5)
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert_close(dq_matmul(x, q, plain), expected, 1e-5)
