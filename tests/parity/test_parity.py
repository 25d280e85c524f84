"""Every family against transformers on the same random weights (f32, logits, KV path).

Each case is converted twice: the portable `default` graph and the `cpu` graph with fused
kernels (GroupQueryAttention where the head size allows, skip norms, packed MatMuls). Both run
a batch of two through prefill and three decode steps; the default graph also a left-padded
batch (the fused kernels take unpadded or right-padded rows, as onnxruntime-genai feeds them).
"""

from __future__ import annotations

import copy

import numpy as np
import onnx_ir as ir
import pytest

from converter import build
from converter.config import SLIDING
from converter.lowering.passes import is_initializer
from converter.validate.metrics import compare
from converter.validate.reference import TransformersReference
from converter.validate.runtime import OnnxDecoder
from tests.parity.cases import CASES
from tests.parity.reference import make_checkpoint

TOLERANCE = 1e-4
RNG = np.random.default_rng(0)
PROMPT = RNG.integers(3, 128, size=(2, 7))
STEPS = [RNG.integers(3, 128, size=(2, 1)) for _ in range(3)]
# the second row left-padded by 3
PADDED_IDS = np.concatenate([PROMPT[:1], np.pad(PROMPT[1:, 3:], ((0, 0), (3, 0)))], axis=0)
PADDED_MASK = np.array([[1] * 7, [0] * 3 + [1] * 4])
PADDED_STEPS = STEPS[:2]


@pytest.fixture(scope="module", params=sorted(CASES))
def converted(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    reference = make_checkpoint(request.param, folder / "hf")
    decoders, packages = {}, {}
    for ep in ("default", "cpu"):
        packages[ep] = build(str(folder / "hf"), ep=ep, progress=False)
        packages[ep].save(folder / ep, progress=False)
        decoders[ep] = OnnxDecoder(folder / ep)
    return reference, decoders, packages, request.param


@pytest.fixture
def reference(converted):
    """A fresh copy per test: dynamic rope keeps state across calls in transformers."""
    return copy.deepcopy(converted[0])


def _max_diff(expected, actual, mask=None):
    return compare(expected, actual, mask).max_abs_diff


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_prefill_and_decode(reference, converted, ep):
    mask = np.ones_like(PROMPT)
    expected = TransformersReference(reference).run(PROMPT, mask, STEPS)
    actual = converted[1][ep].run(PROMPT, mask, STEPS)
    diffs = [_max_diff(e, a) for e, a in zip(expected, actual, strict=True)]
    print(f"{ep}: batch 2, prefill / decode x3 max abs diff:", diffs)
    assert max(diffs) <= TOLERANCE, diffs


def test_batch_left_padding(reference, converted):
    onnx = converted[1]["default"]
    expected = TransformersReference(reference).run(PADDED_IDS, PADDED_MASK, PADDED_STEPS)
    actual = onnx.run(PADDED_IDS, PADDED_MASK, PADDED_STEPS)
    prefill_diff = _max_diff(expected[0], actual[0], PADDED_MASK)
    decode_diffs = [_max_diff(e, a) for e, a in zip(expected[1:], actual[1:], strict=True)]
    print("padded prefill / decode max abs diff:", prefill_diff, decode_diffs)
    assert max(prefill_diff, *decode_diffs) <= TOLERANCE


def test_cpu_graph_runs_group_query_attention(converted):
    """The cpu graph holds GroupQueryAttention in every layer, each with its layer's window as
    that kernel reads it, unless the family cannot use the kernel at all (its package says
    why); no case falls back for a head size the kernel would refuse."""
    package, case = converted[2]["cpu"], converted[3]
    cfg = package.config
    nodes = [n for n in package.model.graph if n.op_type == "GroupQueryAttention"]
    fallbacks = [f for f in package.lowering.fallbacks if "instead of GroupQueryAttention" in f]
    assert not any("head_size" in f for f in fallbacks), fallbacks
    if fallbacks:
        assert nodes == []
        return
    assert len(nodes) == cfg.num_hidden_layers
    windows = [n.attributes.get_int("local_window_size") for n in nodes]
    assert windows == [cfg.sliding_window if t == SLIDING else -1 for t in cfg.layer_types]
    if "window16" in case:  # the fused path whole: window and rotary inside the kernel
        assert SLIDING in cfg.layer_types
        assert all(n.attributes.get_int("do_rotary") == 1 for n in nodes)


def test_cpu_rotary_tables_are_stored_where_the_rope_allows(converted):
    """GroupQueryAttention rotating by a rope whose frequencies do not depend on the length
    reads stored cos/sin tables (none recomputed per step); dynamic NTK and LongRoPE compute
    theirs in the graph."""
    package = converted[2]["cpu"]
    cfg = package.config
    nodes = [n for n in package.model.graph if n.op_type == "GroupQueryAttention"]
    for index, node in enumerate(nodes):
        if node.attributes.get_int("do_rotary") != 1:
            continue
        rope = cfg.rope_of(index)
        storable = rope.kind not in ("dynamic", "longrope")
        assert storable == all(is_initializer(node.inputs[i]) for i in (7, 8)), rope.kind
    if nodes and all(is_initializer(n.inputs[7]) for n in nodes):
        assert not {"Cos", "Sin"} & {n.op_type for n in package.model.graph}


def test_cpu_group_query_attention_splits_packed_qkv_itself(converted):
    """No GroupQueryAttention reads q, k and v from a Split of the shared attention's packed
    projection (`q_proj+k_proj+v_proj` or a fused `qkv_proj`): the kernel takes it whole,
    key and value left empty. Families with attention of their own may still split."""
    for node in converted[2]["cpu"].model.graph:
        if node.op_type != "GroupQueryAttention" or node.inputs[1] is None:
            continue
        split = node.inputs[0].producer()
        if split.op_type == "Split" and {v.producer() for v in node.inputs[:3]} == {split}:
            names = _weights_before(split)
            assert not any(f".{p}." in n for p in _PACKED_QKV for n in names), node.name


_PACKED_QKV = ("q_proj+k_proj+v_proj", "qkv_proj")


def _weights_before(node: ir.Node) -> list[str]:
    """Names of the initializers read by the projection (MatMul, then a bias Add) feeding
    `node`."""
    names, producer = [], node.inputs[0].producer()
    while producer is not None and producer.op_type in ("Add", "MatMul", "MatMulNBits"):
        names += [v.name for v in producer.inputs if is_initializer(v)]
        producer = producer.inputs[0].producer()
    return names


def test_cpu_skip_norms_leave_their_statistics_unwritten(converted):
    """The fused skip norms name no mean / inverse-std outputs (onnxruntime then skips them)."""
    for node in converted[2]["cpu"].model.graph:
        if node.op_type.startswith("Skip"):
            assert [v.name for v in node.outputs[1:3]] == ["", ""], node.name


def test_cpu_graph_runs_experts_in_the_moe_kernel(converted):
    """On cpu every layer with experts runs them in com.microsoft.MoE, unless the package says
    why not; dense families hold none."""
    package = converted[2]["cpu"]
    moe = package.config.moe
    nodes = [n for n in package.model.graph if n.op_type == "MoE"]
    fallbacks = [f for f in package.lowering.fallbacks if "instead of MoE" in f]
    sparse = 0 if moe is None or fallbacks else sum(moe.sparse_layers)
    assert len(nodes) == sparse
    assert package.lowering.fusions.get("MoE", 0) == sparse
