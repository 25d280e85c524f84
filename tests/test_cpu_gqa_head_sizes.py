"""onnxruntime's cpu GroupQueryAttention takes exactly the head sizes the cpu record says.

Every cell of the measured table in docs/execution-providers.md runs again here against a
float64 reference; then a refused head size falls back (and still matches transformers), and the
smallest accepted one runs fused and matches transformers.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from converter import build
from converter.validate.reference import TransformersReference
from converter.validate.runtime import OnnxDecoder
from tests.parity.reference import make_checkpoint

ROOT = Path(__file__).parents[1]
HEADS, KV_HEADS, SEQUENCE = 4, 2, 5
COLUMNS = [(np.float32, False), (np.float32, True), (np.float16, False), (np.float16, True)]
TOLERANCE = {np.float32: 1e-5, np.float16: 3e-3}
RNG = np.random.default_rng(3)
PROMPT = RNG.integers(3, 128, size=(1, 7))
STEPS = [RNG.integers(3, 128, size=(1, 1)) for _ in range(3)]


def _measured_table() -> dict:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CPU_GQA_HEAD_SIZES


CELLS = [
    (size, dtype, rotary, cell)
    for size, cells in _measured_table().items()
    for (dtype, rotary), cell in zip(COLUMNS, cells, strict=True)
]


def _session(head_size: int, dtype, rotary: bool) -> ort.InferenceSession:
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
    inputs = [
        ("query", elem, ["B", "S", HEADS * head_size]),
        ("key", elem, ["B", "S", KV_HEADS * head_size]),
        ("value", elem, ["B", "S", KV_HEADS * head_size]),
        ("past_key", elem, ["B", KV_HEADS, "P", head_size]),
        ("past_value", elem, ["B", KV_HEADS, "P", head_size]),
        ("seqlens_k", TensorProto.INT32, ["B"]),
        ("total_sequence_length", TensorProto.INT32, []),
    ]
    if rotary:
        inputs += [("cos_cache", elem, ["T", "R"]), ("sin_cache", elem, ["T", "R"])]
    node = helper.make_node(
        "GroupQueryAttention",
        [name for name, *_ in inputs],
        ["output", "present_key", "present_value"],
        domain="com.microsoft",
        num_heads=HEADS,
        kv_num_heads=KV_HEADS,
        do_rotary=int(rotary),
    )
    graph = helper.make_graph(
        [node],
        "gqa",
        [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(n, elem, None) for n in node.output],
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _rotate(x, cos, sin):
    half = cos.shape[-1]
    x1, x2 = x[..., :half], x[..., half : 2 * half]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., 2 * half :]], -1)


def _reference(q, k, v, head_size, cos=None, sin=None):
    def heads(x, n):
        return x.astype(np.float64).reshape(1, SEQUENCE, n, head_size).transpose(0, 2, 1, 3)

    q, k, v = heads(q, HEADS), heads(k, KV_HEADS), heads(v, KV_HEADS)
    if cos is not None:
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
    k, v = (np.repeat(x, HEADS // KV_HEADS, axis=1) for x in (k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_size)
    scores = np.where(np.tril(np.ones((SEQUENCE, SEQUENCE), bool)), scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    return (probs @ v).transpose(0, 2, 1, 3).reshape(1, SEQUENCE, -1)


@pytest.mark.parametrize(("head_size", "dtype", "rotary", "cell"), CELLS)
def test_measured_cell_holds(head_size, dtype, rotary, cell):
    rng = np.random.default_rng(head_size)
    q = rng.standard_normal((1, SEQUENCE, HEADS * head_size)).astype(dtype)
    k, v = (rng.standard_normal((1, SEQUENCE, KV_HEADS * head_size)).astype(dtype) for _ in "kv")
    empty = np.zeros((1, KV_HEADS, 0, head_size), dtype)
    feeds = {
        "query": q,
        "key": k,
        "value": v,
        "past_key": empty,
        "past_value": empty,
        "seqlens_k": np.array([SEQUENCE - 1], np.int32),
        "total_sequence_length": np.array(SEQUENCE, np.int32),
    }
    cos = sin = None
    if rotary:
        half = head_size // 2
        angles = np.arange(SEQUENCE)[:, None] * 10000.0 ** (-np.arange(half) / half)
        cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
        feeds |= {"cos_cache": cos, "sin_cache": sin}
    session = _session(head_size, dtype, rotary)
    if cell != "ok":
        multiple = cell.rsplit("% ", 1)[1]  # "refused: ... head_size % 16" -> "16"
        with pytest.raises(Exception, match=rf"head_size \w+ be a multiple of {multiple}\."):
            session.run(["output"], feeds)
        return
    output = session.run(["output"], feeds)[0].astype(np.float64)
    assert np.abs(output - _reference(q, k, v, head_size, cos, sin)).max() <= TOLERANCE[dtype]


def _parity(folder: Path, reference) -> float:
    mask = np.ones_like(PROMPT)
    expected = TransformersReference(reference).run(PROMPT, mask, STEPS)
    actual = OnnxDecoder(folder).run(PROMPT, mask, STEPS)
    return max(float(np.abs(e - a).max()) for e, a in zip(expected, actual, strict=True))


def _gqa_nodes(package):
    return [n for n in package.model.graph if n.op_type == "GroupQueryAttention"]


def test_a_refused_head_size_falls_back_and_still_matches(tmp_path):
    reference = make_checkpoint("llama", tmp_path / "hf", head_dim=20)
    package = build(str(tmp_path / "hf"), ep="cpu", progress=False)
    assert _gqa_nodes(package) == []
    assert package.lowering.fallbacks == [
        "standard Attention op instead of GroupQueryAttention: "
        "head_size 20 is not a multiple of 8 on cpu"
    ]
    package.save(tmp_path / "onnx", progress=False)
    assert _parity(tmp_path / "onnx", reference) <= 1e-4


def test_the_smallest_accepted_head_size_runs_fused_and_matches(tmp_path):
    reference = make_checkpoint("llama", tmp_path / "hf", head_dim=8)
    package = build(str(tmp_path / "hf"), ep="cpu", progress=False)
    nodes = _gqa_nodes(package)
    assert len(nodes) == package.config.num_hidden_layers
    # do_rotary is refused below head size 16: q and k are rotated before the kernel
    assert all(n.attributes.get_int("do_rotary") == 0 for n in nodes)
    assert any("do_rotary needs head_size % 16" in f for f in package.lowering.fallbacks)
    package.save(tmp_path / "onnx", progress=False)
    assert _parity(tmp_path / "onnx", reference) <= 1e-4
