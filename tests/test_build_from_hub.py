"""`mobius build --model ORG/NAME` on the loopback Hub: download, convert, record provenance."""

from __future__ import annotations

import json
from pathlib import Path

import onnxruntime as ort

from converter.cli import main

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"


def _tiny_llama_files() -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in TINY_LLAMA.iterdir() if p.is_file()}
    files["pytorch_model.bin"] = b"never downloaded, never unpickled"
    return files


def test_build_hub_repo_records_source_and_revision(fake_hub, tmp_path, capsys):
    sha = fake_hub.add_repo("acme/tiny-llama-build", _tiny_llama_files())
    out = tmp_path / "pkg"
    argv = ["build", "--model", "acme/tiny-llama-build", "--output", str(out), "--no-progress"]
    assert main(argv) == 0
    assert str(out.resolve()) in capsys.readouterr().out
    manifest = json.loads((out / "mobius.json").read_text())
    assert manifest["source"] == {"repo_id": "acme/tiny-llama-build", "revision": sha, "path": None}
    assert (manifest["ep"], manifest["dtype"], manifest["task"]) == (
        "default",
        "f32",
        "text-generation",
    )
    assert manifest["versions"]["onnxscript"]
    assert (out / "tokenizer.json").read_bytes() == (TINY_LLAMA / "tokenizer.json").read_bytes()
    assert not (out / "pytorch_model.bin").exists()
    ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])


def test_build_unknown_hub_repo_is_one_line_error(fake_hub, tmp_path, capsys):
    argv = ["build", "--model", "acme/no-such-model", "--output", str(tmp_path / "x")]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not found" in err[0], err
    assert not (tmp_path / "x").exists()
