"""An encoder export through the loopback Hub: `mobius convert --publish pr` of a tiny
sentence-transformers repo opens one pull request that adds `onnx/` and nothing else, in the
layout sentence-transformers, Optimum and Transformers.js read."""

from __future__ import annotations

import json
import uuid

import numpy as np
import onnxruntime as ort
import pytest
import torch
import transformers

from mobius.cli import main

BOT, BOT_TOKEN = "mobius-encoder-bot", "hf_mobiusEncoderBotToken01"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[f"w{i}" for i in range(59)]]
SENTENCE_TRANSFORMERS_FILES = {
    "modules.json": [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ],
    "sentence_bert_config.json": {"max_seq_length": 32, "do_lower_case": False},
    "1_Pooling/config.json": {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True},
}


def _sentence_transformers_repo(tmp_path) -> dict[str, bytes]:
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        pad_token_id=0,
    )
    transformers.BertModel(config).save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    for name, data in SENTENCE_TRANSFORMERS_FILES.items():
        files[name] = json.dumps(data).encode()
    return files


@pytest.fixture
def bot(fake_hub, monkeypatch):
    fake_hub.add_token(BOT_TOKEN, BOT)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    return fake_hub


def test_pull_request_adds_onnx_and_nothing_else(bot, tmp_path):
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-embedder"
    source = _sentence_transformers_repo(tmp_path / "hf")
    bot.add_repo(repo_id, source)
    args = ["convert", repo_id, "--ep", "default,cpu", "--dtype", "f32,f16"]
    assert main([*args, "--publish", "pr", "--output", str(tmp_path / "out")]) == 0
    [pr] = bot.repos[repo_id].pull_requests()
    tree = bot.repos[repo_id].files(pr.ref)
    added = {path for path in tree if path not in source}
    assert added == {
        "onnx/README.md",
        "onnx/model.onnx",
        "onnx/model_fp16.onnx",
        "onnx/default-f32/mobius.json",
        "onnx/default-f16/mobius.json",
        "onnx/cpu-f32/model.onnx",
        "onnx/cpu-f32/mobius.json",
        "onnx/cpu-f16/model_fp16.onnx",
        "onnx/cpu-f16/mobius.json",
    }
    assert all(tree[path] == data for path, data in source.items())  # nothing else changed
    session = ort.InferenceSession(tree["onnx/model.onnx"])
    assert [i.name for i in session.get_inputs()] == [
        "input_ids",
        "attention_mask",
        "token_type_ids",
    ]
    assert [o.name for o in session.get_outputs()] == ["last_hidden_state", "pooler_output"]
    card = tree["onnx/README.md"].decode()
    assert 'backend="onnx"' in card and "library_name: sentence-transformers" in card
    manifest = json.loads(tree["onnx/default-f32/mobius.json"])
    assert manifest["task"] == "feature-extraction" and manifest["sentence_transformers"]


def test_hidden_states_in_the_pull_request_match_transformers(bot, tmp_path):
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-embedder"
    bot.add_repo(repo_id, _sentence_transformers_repo(tmp_path / "hf"))
    args = ["convert", repo_id, "--ep", "default", "--dtype", "f32", "--publish", "pr"]
    assert main([*args, "--output", str(tmp_path / "out")]) == 0
    [pr] = bot.repos[repo_id].pull_requests()
    graph = bot.repos[repo_id].files(pr.ref)["onnx/model.onnx"]
    ids = np.array([[2, 7, 9, 11, 3], [2, 8, 3, 0, 0]])
    mask = (ids != 0).astype(np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    hidden = ort.InferenceSession(graph).run(["last_hidden_state"], feeds)[0]
    model = transformers.BertModel.from_pretrained(tmp_path / "hf").eval()
    with torch.no_grad():
        expected = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state
    assert np.abs((hidden - expected.numpy()) * mask[..., None]).max() < 1e-4


def test_a_repo_with_its_own_onnx_model_is_not_overwritten(bot, tmp_path, capsys):
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-embedder"
    files = {**_sentence_transformers_repo(tmp_path / "hf"), "onnx/model.onnx": b"theirs"}
    bot.add_repo(repo_id, files)
    args = ["convert", repo_id, "--ep", "default", "--dtype", "f32", "--publish", "pr"]
    assert main([*args, "--output", str(tmp_path / "out")]) == 1
    assert "already has onnx/model.onnx" in capsys.readouterr().err
    assert bot.repos[repo_id].pull_requests() == []
    assert bot.repos[repo_id].files()["onnx/model.onnx"] == b"theirs"
