"""A vision-language export through the loopback Hub: `mobius convert --publish pr` of a tiny
Qwen2.5-VL repo opens one pull request that adds `onnx/` and nothing else (each variant one
folder of three graphs, genai_config.json and processor_config.json), and the card's
onnxruntime-genai snippet runs on the variant downloaded from refs/pr/1."""

from __future__ import annotations

import json
import re
import uuid

import numpy as np
from PIL import Image

from mobius.cli import main
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm
from tests.tiny_vlm import save_side_files

BOT, BOT_TOKEN = "mobius-vlm-bot", "hf_mobiusVlmBotToken0001"
GRAPHS = ("vision.onnx", "embedding.onnx", "model.onnx")


def test_pull_request_adds_onnx_and_its_card_snippet_runs(fake_hub, tmp_path, monkeypatch):
    fake_hub.add_token(BOT_TOKEN, BOT)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-qwen2.5-vl"
    make_vlm("qwen2_5_vl", CASES["qwen2_5_vl"], tmp_path / "hf")
    save_side_files(tmp_path / "hf")
    source = {p.name: p.read_bytes() for p in (tmp_path / "hf").iterdir()}
    fake_hub.add_repo(repo_id, source)
    args = ["convert", repo_id, "--ep", "cpu", "--dtype", "f32", "--publish", "pr"]
    assert main([*args, "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    [pr] = fake_hub.repos[repo_id].pull_requests()
    tree = fake_hub.repos[repo_id].files(pr.ref)
    added = {path for path in tree if path not in source}
    folder = "onnx/cpu-f32"
    for name in (*GRAPHS, "genai_config.json", "processor_config.json", "mobius.json"):
        assert f"{folder}/{name}" in added, name
    assert all(path.startswith("onnx/") for path in added)
    assert all(tree[path] == data for path, data in source.items())  # nothing else changed
    card = tree["onnx/README.md"].decode()
    assert "pipeline_tag: image-text-to-text" in card
    assert json.loads(tree[f"{folder}/mobius.json"])["runtime"] == "onnxruntime-genai"

    [download, generate] = re.findall(r"```python\n(.*?)```", card, re.S)
    pixels = np.random.default_rng(0).integers(0, 256, size=(24, 32, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(tmp_path / "image.png")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    download = download.replace(
        "allow_patterns=", f'revision="{pr.ref}", allow_patterns='
    )  # what the card tells a reader to add until the PR is merged
    assert "snapshot_download(" in download
    exec(compile(download + generate, "<card>", "exec"), {})
