"""int8 packages: which MatMuls are quantized, what onnxruntime computes for one of them, how
close the logits stay to f32, and which EPs refuse the dtype.

Bounds (measured on the tiny random checkpoints below, 7 prompt tokens and 3 decode steps,
default and cpu alike): against transformers in f32, min cosine llama 0.99841, qwen2 0.99804,
gpt2 0.99938, top-1 1.0, 1.0, 0.8 (random logits have near ties); against transformers with
each int8 weight replaced by its dequantized value, which leaves only the activations'
run-time rounding, min cosine 0.99956, 0.99964, 0.99980 and max relative difference 0.029,
0.027, 0.015. A quantizer that halves every weight, reverses the scales or transposes a square
weight misses these bounds (see docs/execution-providers.md).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest

from converter import build
from converter.errors import MobiusError
from converter.execution_providers import EXECUTION_PROVIDERS
from converter.kernels import EPS, unsupported_ops
from converter.lowering.int8 import quantize_matmuls_int8
from converter.quantize_int8 import quantize_q8
from converter.validate.reference import TransformersReference
from converter.validate.runtime import OnnxDecoder
from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT
from tests.parity.encoder_reference import make_encoder
from tests.parity.reference import make_checkpoint
from tests.quantized_reference import int8_dequantized_copy
from tests.test_ep_matrix import PROMPT, STEPS, _compare

TO_F32 = {"cosine": 0.995, "top1": 0.7}
TO_DEQUANTIZED = {"cosine": 0.999, "relative": 0.06}
# the block projections each layer multiplies by: q, k, v, o, gate, up, down (llama, qwen2);
# GPT-2's c_attn, attn c_proj, c_fc, mlp c_proj. cpu packs q/k/v and gate/up into one MatMul.
PROJECTIONS = {
    ("llama", "default"): 7,
    ("llama", "cpu"): 4,
    ("qwen2", "default"): 7,
    ("qwen2", "cpu"): 4,
    ("gpt2", "default"): 4,
    ("gpt2", "cpu"): 4,
}
CASES = sorted({case for case, _ in PROJECTIONS})


@pytest.fixture(scope="module", params=CASES)
def checkpoint(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    model = make_checkpoint(request.param, folder / "hf")
    mask = np.ones_like(PROMPT)
    references = {
        "f32": TransformersReference(model).run(PROMPT, mask, STEPS),
        "dequantized": TransformersReference(int8_dequantized_copy(model)).run(PROMPT, mask, STEPS),
    }
    return request.param, folder, model.config, references


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_block_projections_are_int8_and_the_head_and_embedding_stay_float(checkpoint, ep):
    case, folder, config, _ = checkpoint
    package = build(str(folder / "hf"), ep=ep, dtype="int8", progress=False)
    graph = package.model.graph
    layers = config.num_hidden_layers
    ops = [n.op_type for n in graph]
    expected = PROJECTIONS[case, ep] * layers
    assert package.lowering.fusions["int8_matmuls"] == ops.count("MatMulInteger") == expected
    # activations are quantized once per input, however many projections read it
    readers = {n.inputs[0] for n in graph if n.op_type == "MatMulInteger"}
    assert ops.count("DynamicQuantizeLinear") == len(readers) == 4 * layers
    for node in (n for n in graph if n.op_type == "MatMulInteger"):
        values = node.inputs[1]
        _, n = values.shape.dims
        assert values.dtype == ir.DataType.INT8 and values.const_value is not None
        [(cast, _)] = node.outputs[0].uses()
        [(scaled, _)] = cast.outputs[0].uses()
        x_scale, weight_scales = scaled.inputs[1].producer().inputs
        assert x_scale.producer().op_type == "DynamicQuantizeLinear"
        assert weight_scales.dtype == ir.DataType.FLOAT and weight_scales.shape.dims == (n,)
    initializers = graph.initializers
    tables = [
        n.inputs[0] for n in graph if n.op_type == "Gather" and n.inputs[0].name in initializers
    ]
    assert tables and all(t.dtype == ir.DataType.FLOAT for t in tables)  # embeddings stay float
    [head] = [
        n.inputs[1]
        for n in graph
        if n.op_type in ("MatMul", "Gemm") and n.inputs[1].name in initializers
    ]
    assert head.dtype == ir.DataType.FLOAT  # the only float MatMul by a weight is the head
    assert head.name == (tables[0].name if config.tie_word_embeddings else "lm_head.weight")


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_logits_stay_close_to_f32(checkpoint, ep):
    case, folder, _, references = checkpoint
    out = folder / f"{ep}-int8"
    build(str(folder / "hf"), ep=ep, dtype="int8", progress=False).save(out, progress=False)
    actual = OnnxDecoder(out).run(PROMPT, np.ones_like(PROMPT), STEPS)
    cosine, _, top1 = _compare(references["f32"], actual)
    exact_cosine, relative, _ = _compare(references["dequantized"], actual)
    print(
        f"{case} {ep}: to f32 cosine {cosine:.5f} top-1 {top1:.2f}; to dequantized cosine "
        f"{exact_cosine:.5f} relative {relative:.4f}"
    )
    assert cosine >= TO_F32["cosine"] and top1 >= TO_F32["top1"]
    assert exact_cosine >= TO_DEQUANTIZED["cosine"] and relative <= TO_DEQUANTIZED["relative"]


def _one_matmul(k: int, n: int, layout_nk: bool) -> tuple[ir.Model, np.ndarray]:
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((n, k)).astype(np.float32)  # [N, K]
    stored = weight if layout_nk else np.ascontiguousarray(weight.T)
    x = ir.Value(name="x", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([2, 3, k]))
    w = ir.Value(name="w", const_value=ir.Tensor(stored, name="w"))
    w.shape, w.type = ir.Shape(stored.shape), ir.TensorType(ir.DataType.FLOAT)
    nodes = []
    right = w
    if layout_nk:
        nodes.append(ir.node("Transpose", [w], attributes={"perm": [1, 0]}, name="t"))
        right = nodes[-1].outputs[0]
    nodes.append(ir.node("MatMul", [x, right], name="mm"))
    nodes[-1].outputs[0].name = "y"
    graph = ir.Graph([x], nodes[-1].outputs, nodes=nodes, initializers=[w], opset_imports={"": 21})
    return ir.Model(graph, ir_version=10), weight


def _emulated(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The ONNX semantics in numpy: DynamicQuantizeLinear to uint8 with a zero point, integer
    products with the int8 weights, then x_scale * w_scale."""
    low, high = min(0.0, float(x.min())), max(0.0, float(x.max()))
    x_scale = np.float32((high - low) / 255)
    zero = np.clip(np.rint(-low / x_scale), 0, 255)
    x_q = np.clip(np.rint(x / x_scale) + zero, 0, 255)
    q = quantize_q8(weight)
    products = (x_q - zero).astype(np.int64) @ q.values.astype(np.int64)
    return products.astype(np.float32) * (x_scale * q.scales)


@pytest.mark.parametrize("layout_nk", [True, False], ids=["linear", "conv1d"])
def test_onnxruntime_computes_uint8_activations_times_int8_weights(tmp_path, layout_nk):
    model, weight = _one_matmul(64, 24, layout_nk)
    assert quantize_matmuls_int8(model, set()) == 1
    ops = [n.op_type for n in model.graph]
    assert ops == ["DynamicQuantizeLinear", "MatMulInteger", "Mul", "Cast", "Mul"]
    ir.save(model, tmp_path / "m.onnx")
    x = np.random.default_rng(4).standard_normal((2, 3, 64)).astype(np.float32) + 0.3
    outputs = []
    for level in (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    ):
        options = ort.SessionOptions()
        options.graph_optimization_level = level  # ENABLE_ALL fuses DynamicQuantizeMatMul
        session = ort.InferenceSession(
            str(tmp_path / "m.onnx"), options, providers=["CPUExecutionProvider"]
        )
        outputs.append(session.run(None, {"x": x})[0])
    np.testing.assert_array_equal(outputs[0], outputs[1])
    np.testing.assert_allclose(outputs[0], _emulated(x, weight), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("ep", "missing"), [("cuda", "DynamicQuantizeLinear"), ("webgpu", "MatMulInteger")]
)
def test_eps_without_the_kernels_refuse_int8_by_name(ep, missing):
    with pytest.raises(MobiusError) as info:
        build("no/such-repo-is-ever-contacted", ep=ep, dtype="int8")
    message = str(info.value)
    assert f"{ep!r} does not run int8" in message and missing in message
    assert message.endswith("int8 is available for default, cpu, dml")


def test_the_eps_running_int8_are_those_whose_kernel_tables_have_it(tmp_path):
    """The records agree with the published kernel tables: an EP offers int8 exactly when it has
    kernels for the quantizing ops the int8 chain adds (the rest of the portable graph aside)."""
    folder = tmp_path / "hf"
    make_checkpoint("llama", folder)
    model = build(str(folder), ep="default", dtype="int8", progress=False).model
    chain = ("DynamicQuantizeLinear", "MatMulInteger")
    for ep in EPS:
        missing = [line for line in unsupported_ops(model, ep) if any(op in line for op in chain)]
        assert ("int8" in EXECUTION_PROVIDERS[ep].dtypes) == (not missing), (ep, missing)


def test_encoders_quantize_their_layers_and_keep_the_vocabulary_projection_float(tmp_path):
    """The pass reads any component: a BERT encoder's projections become int8 in the graph
    Transformers.js and Optimum name model_quantized.onnx; an untied masked-LM decoder, an LM
    head, stays float."""
    case = EncoderCase({"model_type": "bert", **TEXT, "tie_word_embeddings": False}, ())
    make_encoder("bert:untied", case, "BertForMaskedLM", tmp_path / "hf")
    package = build(str(tmp_path / "hf"), ep="cpu", dtype="int8", progress=False)
    [component] = package.components
    assert component.filename == "onnx/model_quantized.onnx"
    # q, k, v, attention output, intermediate, output per layer; the prediction transform
    assert package.lowering.fusions["int8_matmuls"] == 6 * package.config.num_hidden_layers + 1
    decoder = component.model.graph.initializers["cls.predictions.decoder.weight"]
    assert decoder.dtype == ir.DataType.FLOAT
    assert [node.op_type for node, _ in decoder.uses()] == ["MatMul"]
