"""`--release`: the saved graphs lose their doc strings, node metadata and long node names,
keep the functional `mobius.` metadata, load unchanged and compute exactly the same."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from converter.cli import main
from converter.release import strip

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"


def _logits(folder: Path) -> np.ndarray:
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {}
    for meta in session.get_inputs():
        if meta.name == "input_ids":
            feeds[meta.name] = np.array([[5, 9, 23, 7]], dtype=np.int64)
        elif meta.name in ("attention_mask", "position_ids"):
            feeds[meta.name] = np.array(
                [[1, 1, 1, 1]] if meta.name == "attention_mask" else [[0, 1, 2, 3]], dtype=np.int64
            )
        else:  # an empty cache
            shape = [
                1 if i == 0 else (0 if isinstance(d, str) else d) for i, d in enumerate(meta.shape)
            ]
            feeds[meta.name] = np.zeros(shape, np.float32)
    return session.run(["logits"], feeds)[0]


def test_release_strips_metadata_and_computes_the_same(tmp_path, capsys):
    argv = ["build", "--model", str(TINY_LLAMA), "--ep", "cpu", "--no-progress"]
    assert main([*argv, "--output", str(tmp_path / "debug")]) == 0
    assert main([*argv, "--output", str(tmp_path / "release"), "--release"]) == 0
    assert "of debug metadata left out" in capsys.readouterr().out
    debug, release = (onnx.load(str(tmp_path / v / "model.onnx")) for v in ("debug", "release"))
    assert any(node.metadata_props for node in debug.graph.node)  # what there is to strip
    assert not any(node.metadata_props or node.doc_string for node in release.graph.node)
    assert all(len(node.name) <= len(node.op_type) + 6 for node in release.graph.node)
    assert [n.op_type for n in release.graph.node] == [n.op_type for n in debug.graph.node]
    assert release.ByteSize() < debug.ByteSize()
    assert json.loads((tmp_path / "release" / "mobius.json").read_text())["release"] is True
    np.testing.assert_array_equal(_logits(tmp_path / "release"), _logits(tmp_path / "debug"))


def test_functional_metadata_stays():
    import onnx_ir as ir

    graph = ir.Graph([], [], nodes=[], name="g")
    model = ir.Model(graph, ir_version=10)
    model.metadata_props.update({"mobius.task": "text-generation", "built_by": "someone"})
    assert strip(model) == len("built_by") + len("someone")
    assert dict(model.metadata_props) == {"mobius.task": "text-generation"}
