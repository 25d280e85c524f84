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

import converter.repo_files as repo_files
from converter.errors import SourceError
from converter.repo_files import MAX_SIDE_FILE_BYTES, fetch_plan
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


# -- symlinks out of a local folder -------------------------------------------------------------
def _local_model(folder: Path) -> Path:
    folder.mkdir()
    index = {"weight_map": {"model.embed_tokens.weight": "model.safetensors"}}
    files = {
        "config.json": CONFIG,
        "model.safetensors": WEIGHTS,
        "model.safetensors.index.json": json.dumps(index).encode(),
        "tokenizer.json": b'{"model": {}}',
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize(
    "name", ["config.json", "model.safetensors", "model.safetensors.index.json", "tokenizer.json"]
)
def test_a_symlink_out_of_the_local_folder_is_refused(tmp_path: Path, name: str) -> None:
    folder = _local_model(tmp_path / "model")
    outside = tmp_path / "elsewhere" / name
    outside.parent.mkdir()
    (folder / name).rename(outside)
    (folder / name).symlink_to(outside)
    with pytest.raises(SourceError, match=rf"'{re.escape(name)}' in .* is a symlink to .*outside"):
        resolve_source(str(folder))


def test_a_symlink_within_the_local_folder_is_fine(tmp_path: Path) -> None:
    folder = _local_model(tmp_path / "model")
    (folder / "weights").mkdir()
    (folder / "model.safetensors").rename(folder / "weights" / "real.safetensors")
    (folder / "model.safetensors").symlink_to(Path("weights") / "real.safetensors")
    assert resolve_source(str(folder)).path == folder.resolve()


def test_a_hub_cache_snapshot_folder_links_into_its_own_blobs(fake_hub: FakeHub) -> None:
    repo_id, _ = new_repo(fake_hub, model_files(**{"tokenizer.json": b"{}"}))
    snapshot = resolve_source(repo_id).path  # every file a link into ../../blobs
    assert all((snapshot / n).is_symlink() for n in ("config.json", "model.safetensors"))
    assert resolve_source(str(snapshot)).path == snapshot.resolve()  # as a local folder too


def test_a_snapshot_link_out_of_its_repo_cache_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / "models--acme--tiny"
    (repo / "snapshots").mkdir(parents=True)
    (repo / "blobs").mkdir()
    snapshot = _local_model(repo / "snapshots" / ("a" * 40))
    (snapshot / "config.json").rename(repo / "blobs" / "c0ffee")
    (snapshot / "config.json").symlink_to(Path("../../blobs/c0ffee"))
    assert resolve_source(str(snapshot)).path == snapshot.resolve()
    stranger = tmp_path / "hub" / "models--other--repo" / "blobs" / "f00d"
    stranger.parent.mkdir(parents=True)
    (snapshot / "tokenizer.json").rename(stranger)
    (snapshot / "tokenizer.json").symlink_to(stranger)
    with pytest.raises(SourceError, match=r"'tokenizer\.json' in .* outside the model folder"):
        resolve_source(str(snapshot))


# -- which files a Hub download fetches ---------------------------------------------------------
def test_fetch_plan_is_the_known_names_present_each_under_the_cap() -> None:
    files = [
        ("config.json", 500),
        ("tokenizer.json", 33_400_000),  # Gemma 3's
        ("tokenizer.junk", 40 << 20),
        ("padding.model", 40 << 20),
        ("sub/tokenizer.json", 10),
        ("spiece.model", 700_000),
        ("model.safetensors", 10**12),  # weights are planned separately
    ]
    assert fetch_plan(files) == ["config.json", "spiece.model", "tokenizer.json"]
    with pytest.raises(SourceError, match=r"'tokenizer\.json' is 67,108,865 bytes, over the"):
        fetch_plan([("tokenizer.json", MAX_SIDE_FILE_BYTES + 1)])
    with pytest.raises(SourceError, match=r"'vocab\.json' has no size on the Hub"):
        fetch_plan([("vocab.json", None)])


def test_hub_download_fetches_side_files_by_exact_name(fake_hub: FakeHub) -> None:
    junk = b"\0" * (4 << 20)
    files = model_files(**{"tokenizer.json": b"{}", "tokenizer.junk": junk, "padding.model": junk})
    repo_id, _ = new_repo(fake_hub, files)
    source = resolve_source(repo_id, progress=False)
    assert set(os.listdir(source.path)) == {"config.json", "model.safetensors", "tokenizer.json"}
    asked = [r.path for r in fake_hub.requests if f"/{repo_id}/resolve/" in r.path]
    assert any(p.endswith("/tokenizer.json") for p in asked)
    assert not any(p.endswith(("/tokenizer.junk", "/padding.model")) for p in asked)


def test_an_over_cap_side_file_is_refused_before_any_download(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(repo_files, "MAX_SIDE_FILE_BYTES", 1000)
    repo_id, _ = new_repo(fake_hub, model_files(**{"tokenizer.json": b"x" * 1001}))
    with pytest.raises(SourceError, match=r"'tokenizer\.json' is 1,001 bytes, over the 1,000-byte"):
        resolve_source(repo_id, progress=False)
    assert not any(f"/{repo_id}/resolve/" in r.path for r in fake_hub.requests)


# -- offline mode -------------------------------------------------------------------------------
def test_offline_mode_says_so_and_how_to_proceed(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    seen = len(fake_hub.requests)
    with pytest.raises(SourceError) as err:
        resolve_source("mobius-tests/never-downloaded")
    assert "offline mode is on (HF_HUB_OFFLINE=1)" in message(err)
    assert "unset HF_HUB_OFFLINE" in message(err) and "local folder" in message(err)
    assert "cannot reach" not in message(err)
    assert len(fake_hub.requests) == seen
