"""An encoder-decoder export through the loopback Hub: `mobius convert --publish pr` of a tiny
BART repo opens one pull request that adds `onnx/` and nothing else (two graphs per variant),
and Transformers.js generates transformers' greedy tokens from it at refs/pr/1."""

from __future__ import annotations

import json
import uuid

import torch

from mobius.cli import main
from tests.test_transformers_js_seq2seq import OPTIONS
from tests.tiny_seq2seq import TEXTS, tiny_bart

BOT, BOT_TOKEN = "mobius-seq2seq-bot", "hf_mobiusSeq2seqBotToken01"


def test_pull_request_adds_onnx_and_generates_in_transformers_js(
    fake_hub, transformers_js, tmp_path, monkeypatch
):
    fake_hub.add_token(BOT_TOKEN, BOT)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-bart"
    model, tok = tiny_bart(tmp_path / "hf", init_std=0.3)  # within validation's f32 bound
    source = {p.name: p.read_bytes() for p in (tmp_path / "hf").iterdir()}
    fake_hub.add_repo(repo_id, source)
    args = ["convert", repo_id, "--ep", "default,cpu", "--dtype", "f32", "--publish", "pr"]
    assert main([*args, "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    [pr] = fake_hub.repos[repo_id].pull_requests()
    tree = fake_hub.repos[repo_id].files(pr.ref)
    assert {path for path in tree if path not in source} == {
        "onnx/README.md",
        "onnx/encoder_model.onnx",
        "onnx/decoder_model_merged.onnx",
        "onnx/default-f32/mobius.json",
        "onnx/cpu-f32/encoder_model.onnx",
        "onnx/cpu-f32/decoder_model_merged.onnx",
        "onnx/cpu-f32/mobius.json",
    }
    assert all(tree[path] == data for path, data in source.items())  # nothing else changed
    assert "pipeline_tag: text2text-generation" in tree["onnx/README.md"].decode()
    assert json.loads(tree["onnx/cpu-f32/mobius.json"])["task"] == "text2text-generation"

    ids = tok(TEXTS[1:], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        expected = model.generate(ids, **OPTIONS, do_sample=False, num_beams=1)
    request = {
        "remote_host": f"{fake_hub.url}/",
        "cache_dir": str(tmp_path / "js-cache"),
        "model": repo_id,
        "auto": "AutoModelForSeq2SeqLM",
        "options": {"revision": pr.ref},
        "calls": [{"generate": {"input_ids": ids.tolist(), **OPTIONS}}],
    }
    [tokens] = transformers_js.run(request)
    assert tokens["data"] == expected[0].tolist()
