"""The decoder attention kernels against numpy: cached causal self-attention (new tokens see
the past and themselves up to their position) and cross-attention over the encoder's padded
keys, each with and without an additive bias (T5's relative positions), in the standard and
the fused kernel."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnxscript import GraphBuilder

from converter.components.seq2seq_attention import (
    FusedCachedAttention,
    FusedCrossAttention,
    StandardCachedAttention,
    StandardCrossAttention,
)
from converter.tasks.base import as_model, new_graph

B, N, H, S, P, L = 2, 4, 8, 3, 5, 6
RNG = np.random.default_rng(0)
F32 = ir.DataType.FLOAT


def softmax_attention(q, k, v, keep, bias):
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(H) + bias
    scores = np.where(keep, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


def heads(x):  # [B, T, N * H] -> [B, N, T, H]
    return x.reshape(B, -1, N, H).transpose(0, 2, 1, 3)


def run(build, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    graph = new_graph()
    builder = GraphBuilder(graph)
    values = {}
    for name, array in feeds.items():
        dtype = F32 if array.dtype == np.float32 else ir.DataType.INT64
        values[name] = builder.input(name, dtype, list(array.shape))
    for i, out in enumerate(build(builder.op, values)):
        builder.add_output(out, f"out{i}")
    model = as_model(graph)
    model.opset_imports["com.microsoft"] = 1
    session = ort.InferenceSession(ir.to_proto(model).SerializeToString())
    return session.run(None, feeds)


@pytest.mark.parametrize("kernel", [StandardCachedAttention, FusedCachedAttention])
@pytest.mark.parametrize("biased", [False, True])
def test_cached_self_attention(kernel, biased):
    q, k, v = (RNG.standard_normal((B, S, N * H), np.float32) for _ in range(3))
    past_k, past_v = (RNG.standard_normal((B, N, P, H), np.float32) for _ in range(2))
    bias = RNG.standard_normal((1, N, S, P + S), np.float32)
    feeds = {"q": q, "k": k, "v": v, "pk": past_k, "pv": past_v, **({"b": bias} if biased else {})}

    def build(op, x):
        attend = kernel(F32)
        return attend(op, x["q"], x["k"], x["v"], x["pk"], x["pv"], N, H**-0.5, x.get("b"))

    y, present_k, present_v = run(build, feeds)
    keys = np.concatenate([past_k, heads(k)], 2)
    values = np.concatenate([past_v, heads(v)], 2)
    keep = np.arange(P + S)[None, :] <= np.arange(S)[:, None] + P
    expected = softmax_attention(heads(q), keys, values, keep, bias if biased else 0)
    assert np.abs(present_k - keys).max() == 0 and np.abs(present_v - values).max() == 0
    assert np.abs(y - expected.transpose(0, 2, 1, 3).reshape(B, S, -1)).max() < 1e-5


@pytest.mark.parametrize("kernel", [StandardCrossAttention, FusedCrossAttention])
@pytest.mark.parametrize("biased", [False, True])
def test_cross_attention_over_padded_encoder_keys(kernel, biased):
    q = RNG.standard_normal((B, S, N * H), np.float32)
    key, value = (RNG.standard_normal((B, N, L, H), np.float32) for _ in range(2))
    mask = np.array([[1] * L, [1] * 4 + [0] * (L - 4)])
    bias = RNG.standard_normal((1, N, S, L), np.float32)
    feeds = {"q": q, "k": key, "v": value, "m": mask, **({"b": bias} if biased else {})}

    def build(op, x):
        attend = kernel(op, x["m"], F32)
        return [attend(op, x["q"], x["k"], x["v"], N, H**-0.5, x.get("b"))]

    [y] = run(build, feeds)
    keep = mask[:, None, None, :].astype(bool)
    expected = softmax_attention(heads(q), key, value, keep, bias if biased else 0)
    assert np.abs(y - expected.transpose(0, 2, 1, 3).reshape(B, S, -1)).max() < 1e-5
