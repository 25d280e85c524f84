"""Attention within blocks of one packed sequence (several images' patches, or windows): the
fused kernel (MultiHeadAttention with the mask as an additive bias) and the portable one
(opset-23 Attention with the boolean mask) against numpy, and each EP gets the kernel it
names, in the towers that pack several images into one sequence too."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnxscript import GraphBuilder

from converter import build
from converter.components.encoder_attention import BlockAttention
from converter.execution_providers import EXECUTION_PROVIDERS
from converter.tasks.base import as_model, new_graph
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm

N, H = 2, 4  # heads, head size
BLOCKS = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])  # three images of 3, 2 and 4 patches
F32 = ir.DataType.FLOAT


def numpy_attention(q, k, v, keep):
    q, k, v = (x.reshape(-1, N, H).transpose(1, 0, 2) for x in (q, k, v))
    scores = np.where(keep, q @ k.transpose(0, 2, 1) / np.sqrt(H), -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    out = (weights / weights.sum(-1, keepdims=True)) @ v
    return out.transpose(1, 0, 2).reshape(1, -1, N * H)


@pytest.mark.parametrize(("ep", "op"), [("default", "Attention"), ("cpu", "MultiHeadAttention")])
def test_each_patch_attends_its_own_block(ep, op):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, len(BLOCKS), N * H), np.float32) for _ in range(3))
    keep = BLOCKS[:, None] == BLOCKS[None, :]
    graph = new_graph()
    builder = GraphBuilder(graph)
    inputs = [builder.input(name, F32, [1, len(BLOCKS), N * H]) for name in "qkv"]
    mask = builder.input("keep", ir.DataType.BOOL, list(keep.shape))
    kernel = BlockAttention(builder.op, EXECUTION_PROVIDERS[ep], mask, F32)
    builder.add_output(kernel(builder.op, *inputs, N, H**-0.5), "out")
    model = as_model(graph)
    model.opset_imports["com.microsoft"] = 1
    assert op in {node.op_type for node in model.graph}
    session = ort.InferenceSession(ir.to_proto(model).SerializeToString())
    [got] = session.run(None, {"q": q, "k": k, "v": v, "keep": keep})
    np.testing.assert_allclose(got, numpy_attention(q, k, v, keep), atol=1e-5)


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl", "mistral3"])
def test_packed_image_towers_use_the_eps_kernel(family, tmp_path):
    """Every tower layer attends with MultiHeadAttention on cpu and Attention on default."""
    make_vlm(family, CASES[family], tmp_path / "hf")
    for ep, op in (("cpu", "MultiHeadAttention"), ("default", "Attention")):
        [vision] = [
            c
            for c in build(str(tmp_path / "hf"), ep=ep, progress=False).components
            if c.role == "vision"
        ]
        kinds = Counter(node.op_type for node in vision.model.graph.all_nodes())
        layers = len(vision.module.visual.blocks) if hasattr(vision.module, "visual") else None
        assert kinds[op] == (layers or kinds[op]) and kinds[op] > 0, kinds
        other = {"MultiHeadAttention", "Attention"} - {op}
        assert not any(kinds[name] for name in other), kinds
