"""resolve_source against local folders and, with the real huggingface_hub client, a FakeHub."""

import json
import os
import re
import traceback
import uuid
from pathlib import Path

import huggingface_hub.constants
import numpy as np
import pytest
from safetensors.numpy import save

from converter.errors import SourceError
from converter.source import Source, resolve_source
from tests.hub_server import FakeHub, Request, Response

CONFIG = json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}).encode()
WEIGHTS = save({"model.embed_tokens.weight": np.arange(6, dtype=np.float32).reshape(2, 3)})
TOKEN = "hf_mobius_test_token_8f2c"  # accepted by the FakeHub
BAD_TOKEN = "hf_not_a_valid_token_77aa"


def new_repo(hub: FakeHub, files: dict[str, bytes], **kwargs: bool) -> tuple[str, str]:
    """A fresh repo id (the HF cache is shared by the session) and its first commit sha."""
    repo_id = f"mobius-tests/{uuid.uuid4().hex[:10]}"
    return repo_id, hub.add_repo(repo_id, files, **kwargs)


def model_files(**extra: bytes) -> dict[str, bytes]:
    return {"config.json": CONFIG, "model.safetensors": WEIGHTS, **extra}


def message(exc_info: pytest.ExceptionInfo[SourceError]) -> str:
    return str(exc_info.value)


# -- local folders ------------------------------------------------------------------------------
def test_local_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.json").write_bytes(CONFIG)
    assert resolve_source(str(tmp_path)) == Source(tmp_path.resolve(), None, None)
    monkeypatch.chdir(tmp_path.parent)
    assert resolve_source(tmp_path.name).path == tmp_path.resolve()  # made absolute


def test_local_folder_without_config(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(WEIGHTS)
    with pytest.raises(SourceError) as err:
        resolve_source(str(tmp_path))
    assert str(tmp_path) in message(err) and "config.json" in message(err)


@pytest.mark.parametrize("name", ["./missing-model", "/no/such/dir", "~/no-such-mobius-dir"])
def test_missing_folder(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SourceError, match="no such folder") as err:
        resolve_source(name)
    assert name in message(err)


@pytest.mark.parametrize(
    "name", ["../etc", "a/b/c", "a..b", "", "-abc", "abc.", "a--b", "a b", "org/x?y", "x" * 97]
)
def test_malformed_repo_ids(
    name: str, fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    seen = len(fake_hub.requests)
    with pytest.raises(SourceError) as err:
        resolve_source(name)
    assert f"'{name}'" in message(err)
    assert len(fake_hub.requests) == seen  # refused before asking the Hub


# -- Hub downloads ------------------------------------------------------------------------------
def test_hub_download_fetches_only_needed_files(fake_hub: FakeHub) -> None:
    files = model_files(
        **{
            "tokenizer.json": b'{"model": {}}',
            "tokenizer_config.json": b"{}",
            "generation_config.json": b'{"eos_token_id": 2}',
            "big.bin": b"pickle" * 100,
            "README.md": b"---\nlicense: mit\n---\n# card\n",
            "onnx/model.onnx": b"onnx",
            "sub/tokenizer.json": b"{}",
        }
    )
    repo_id, sha = new_repo(fake_hub, files)
    source = resolve_source(repo_id, progress=False)
    assert source.repo_id == repo_id and source.revision == sha
    wanted = {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
    }
    assert set(os.listdir(source.path)) == wanted
    for name in wanted:
        assert (source.path / name).read_bytes() == files[name]
    fetched = {
        r.path
        for r in fake_hub.requests
        if r.method == "GET" and f"/{repo_id}/resolve/" in r.path  # the hub is shared
    }
    assert fetched and not any(p.endswith(("big.bin", "README.md", "model.onnx")) for p in fetched)


def test_revisions_resolve_to_commit_sha(fake_hub: FakeHub) -> None:
    repo_id, first = new_repo(fake_hub, model_files())
    second = fake_hub.commit(repo_id, {"config.json": CONFIG.replace(b"llama", b"qwen2")})
    fake_hub.commit(repo_id, {"config.json": b'{"model_type": "pr"}'}, branch="refs/pr/1")
    assert resolve_source(repo_id, revision="main").revision == second
    assert resolve_source(repo_id).revision == second
    old = resolve_source(repo_id, revision=first)
    assert old.revision == first and (old.path / "config.json").read_bytes() == CONFIG
    pr = resolve_source(repo_id, revision="refs/pr/1")
    assert (pr.path / "config.json").read_bytes() == b'{"model_type": "pr"}'
    assert any(r.path.endswith("/revision/refs%2Fpr%2F1") for r in fake_hub.requests)


def test_download_is_pinned_to_the_resolved_sha(fake_hub: FakeHub) -> None:
    """main moves right after model_info answered: the files still come from the sha it gave."""
    repo_id, first = new_repo(fake_hub, model_files())

    def info_then_push(request: Request, match: re.Match[str]) -> Response:
        response = fake_hub.api_model_info(request, match)
        fake_hub.commit(repo_id, {"config.json": b'{"model_type": "moved"}'})
        return response

    pattern = rf"/api/models/(?P<repo>{re.escape(repo_id)})(?:/revision/(?P<rev>[^/]+))?"
    fake_hub.add_route("GET", pattern, info_then_push, first=True)
    try:
        source = resolve_source(repo_id, revision="main")
    finally:
        fake_hub.routes.pop(0)
    assert source.revision == first and (source.path / "config.json").read_bytes() == CONFIG


def test_sharded_checkpoint_skips_duplicate_weights(fake_hub: FakeHub) -> None:
    shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    index = {"metadata": {}, "weight_map": {"a": shards[0], "b": shards[1]}}
    files = {
        "config.json": CONFIG,
        "model.safetensors.index.json": json.dumps(index).encode(),
        shards[0]: WEIGHTS,
        shards[1]: WEIGHTS,
        "consolidated.safetensors": WEIGHTS,
    }
    repo_id, _ = new_repo(fake_hub, files)
    source = resolve_source(repo_id)
    assert set(os.listdir(source.path)) == {"config.json", "model.safetensors.index.json", *shards}


def test_index_naming_a_missing_shard(fake_hub: FakeHub) -> None:
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "../escape.safetensors"}}
    files = {
        "config.json": CONFIG,
        "model.safetensors.index.json": json.dumps(index).encode(),
        "model-00001-of-00002.safetensors": WEIGHTS,
    }
    repo_id, _ = new_repo(fake_hub, files)
    with pytest.raises(SourceError, match=r"names files not in the repo.*escape"):
        resolve_source(repo_id)


def test_unknown_repo(fake_hub: FakeHub) -> None:
    with pytest.raises(SourceError, match="not found") as err:
        resolve_source("mobius-tests/does-not-exist")
    assert "'mobius-tests/does-not-exist'" in message(err) and fake_hub.url in message(err)


def test_private_repo_needs_token(fake_hub: FakeHub) -> None:
    fake_hub.add_token(TOKEN)
    repo_id, sha = new_repo(fake_hub, model_files(), private=True, readers=("tester",))
    with pytest.raises(SourceError, match=r"not found.*HF_TOKEN"):
        resolve_source(repo_id)
    assert resolve_source(repo_id, token=TOKEN).revision == sha


def test_gated_repo(fake_hub: FakeHub) -> None:
    fake_hub.add_token(TOKEN)
    repo_id, sha = new_repo(fake_hub, model_files(), gated=True)
    with pytest.raises(SourceError, match="gated") as err:
        resolve_source(repo_id)
    assert f"'{repo_id}'" in message(err) and "HF_TOKEN" in message(err)
    source = resolve_source(repo_id, token=TOKEN)
    assert source.revision == sha and (source.path / "model.safetensors").read_bytes() == WEIGHTS


def test_hf_token_environment_variable_is_used(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_hub.add_token(TOKEN)
    repo_id, sha = new_repo(fake_hub, model_files(), gated=True)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert resolve_source(repo_id).revision == sha
    downloads = [r for r in fake_hub.requests if r.method == "GET" and repo_id in r.path]
    assert downloads and all(r.token == TOKEN for r in downloads)


@pytest.mark.parametrize("revision", ["no-such-branch", "refs/pr/9", "0" * 40])
def test_unknown_revision(revision: str, fake_hub: FakeHub) -> None:
    repo_id, _ = new_repo(fake_hub, model_files())
    with pytest.raises(SourceError) as err:
        resolve_source(repo_id, revision=revision)
    assert f"revision '{revision}' not found" in message(err) and repo_id in message(err)


def test_pickle_only_repo_is_refused(fake_hub: FakeHub) -> None:
    repo_id, _ = new_repo(fake_hub, {"config.json": CONFIG, "pytorch_model.bin": b"pickle"})
    with pytest.raises(SourceError, match="safetensors only and never unpickles") as err:
        resolve_source(repo_id)
    assert "pytorch_model.bin" in message(err)
    assert not any(
        r.method == "GET" and "/resolve/" in r.path and repo_id in r.path for r in fake_hub.requests
    )


def test_repo_without_weights_is_refused(fake_hub: FakeHub) -> None:
    repo_id, _ = new_repo(fake_hub, {"config.json": CONFIG, "model.gguf": b"gguf"})
    with pytest.raises(SourceError, match=r"no \.safetensors weights"):
        resolve_source(repo_id)


def test_repo_without_config_is_refused(fake_hub: FakeHub) -> None:
    repo_id, _ = new_repo(fake_hub, {"model.safetensors": WEIGHTS})
    with pytest.raises(SourceError, match=r"no config\.json"):
        resolve_source(repo_id)


def test_unreachable_hub_names_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", endpoint)
    with pytest.raises(SourceError, match="cannot reach") as err:
        resolve_source("mobius-tests/anything")
    assert endpoint in message(err)


def test_tokens_never_appear_in_errors(fake_hub: FakeHub) -> None:
    fake_hub.add_token(TOKEN)
    gated_id, _ = new_repo(fake_hub, model_files(), gated=True)
    plain_id, _ = new_repo(fake_hub, model_files())
    cases = [
        ("mobius-tests/missing-repo", None, TOKEN, "not found"),
        (plain_id, "no-such-branch", TOKEN, "not found"),
        (gated_id, None, BAD_TOKEN, "rejected the token"),
        (plain_id, None, BAD_TOKEN, "rejected the token"),
    ]
    for repo_id, revision, token, expected in cases:
        with pytest.raises(SourceError, match=expected) as err:
            resolve_source(repo_id, revision=revision, token=token)
        text = "".join(traceback.format_exception(err.value))
        assert token not in text, (repo_id, token)
        requests = [r for r in fake_hub.requests if repo_id in r.path]
        assert requests[-1].token == token  # the token was sent, so the check above can fail
