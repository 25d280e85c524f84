"""What an encoder package holds on disk: one graph file under `onnx/` named by its dtype, its
weights inside it below protobuf's cap (Transformers.js reads one file) and in `<file>_data`
above it (the name Transformers.js and Optimum fetch), the config beside `onnx/`."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
import transformers

from converter import build
from converter.package import package as package_module

TINY = transformers.BertConfig(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=2,
    max_position_embeddings=32,
)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert")
    torch.manual_seed(0)
    transformers.BertModel(TINY).save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    ("dtype", "name"),
    [("f32", "model.onnx"), ("f16", "model_fp16.onnx"), ("int4", "model_q4.onnx")],
)
def test_one_file_per_graph_named_by_dtype(checkpoint, tmp_path, dtype, name):
    out = build(str(checkpoint), dtype=dtype, progress=False).save(tmp_path, progress=False)
    assert sorted(p.name for p in (out / "onnx").iterdir()) == [name]
    assert (out / "config.json").read_bytes() == (checkpoint / "config.json").read_bytes()


def test_weights_above_the_cap_go_to_the_data_file_the_libraries_fetch(
    checkpoint, tmp_path, monkeypatch
):
    monkeypatch.setattr(package_module, "INLINE_LIMIT", 0)
    out = build(str(checkpoint), progress=False).save(tmp_path, progress=False)
    assert sorted(p.name for p in (out / "onnx").iterdir()) == ["model.onnx", "model.onnx_data"]
    ids = np.array([[2, 5, 7]])
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    hidden = ort.InferenceSession(out / "onnx" / "model.onnx").run(None, feeds)[0]
    assert hidden.shape == (1, 3, 32)


def test_int4_lm_head_flag_builds_an_encoder_on_cpu(checkpoint, tmp_path):
    """The flag quantizes decoders' token tables; an encoder keeps its table float."""
    package = build(str(checkpoint), ep="cpu", dtype="int4", int4_head_bits=4, progress=False)
    out = package.save(tmp_path, progress=False)
    ops = {n.op_type for n in package.components[0].model.graph}
    assert "MatMulNBits" in ops and "GatherBlockQuantized" not in ops
    ids = np.array([[2, 5, 7]])
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    session = ort.InferenceSession(out / "onnx" / "model_q4.onnx")
    assert session.run(None, feeds)[0].shape == (1, 3, 32)


def test_half_precision_graphs_give_float32_outputs(checkpoint, tmp_path):
    """As the fp16 exports Transformers.js ships: its pipelines read a float16 output's raw
    16-bit words under Node."""
    out = build(str(checkpoint), dtype="f16", progress=False).save(tmp_path, progress=False)
    session = ort.InferenceSession(out / "onnx" / "model_fp16.onnx")
    assert {o.type for o in session.get_outputs()} == {"tensor(float)"}
    ids = np.array([[2, 5, 7]])
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    assert session.run(None, feeds)[0].dtype == np.float32
