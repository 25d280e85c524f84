"""The real job runner through the queue: a request becomes one pull request, even twice."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from mobius.cli import main
from pipeline.jobs import ConversionRequest, JobQueue, JobRefused, Limits
from tests.test_jobs import wait_for

TINY = Path(__file__).parents[1] / "examples" / "tiny-llama"
BOT, BOT_TOKEN = "mobius-pipeline-bot", "hf_mobiusPipelineBotToken01"


def test_queued_request_opens_one_pull_request(fake_hub, tmp_path, monkeypatch):
    fake_hub.add_token(BOT_TOKEN, BOT)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-llama"
    sha = fake_hub.add_repo(repo_id, {p.name: p.read_bytes() for p in TINY.iterdir()})
    queue = JobQueue(tmp_path / "jobs", runner="pipeline.convert:run", limits=Limits(rate=None))
    request = ConversionRequest(
        source=repo_id, eps=("cpu",), dtypes=("f32", "int4"), requester="alice", origin="space"
    )
    with queue.worker():
        first = wait_for(queue, queue.submit(request), timeout=120, state="succeeded")
        again = wait_for(queue, queue.submit(request), timeout=120, state="succeeded")
    [pr] = fake_hub.repos[repo_id].discussions
    assert first.result["url"].endswith(f"/discussions/{pr.num}") and pr.base == sha
    assert first.result["outcome"] == "opened"
    assert set(first.result["reports"]) == {"onnx/cpu-f32", "onnx/cpu-int4"}
    assert all(r["status"] == "passed" for r in first.result["reports"].values())
    assert again.id == first.id  # same source revision and variants: the finished job
    stages = [event["stage"] for event in first.progress]
    assert stages.index("build") < stages.index("validate") < stages.index("publish")


def test_service_refuses_local_folders(tmp_path):
    queue = JobQueue(tmp_path / "jobs", runner="pipeline.convert:run")
    request = ConversionRequest(source=str(TINY), eps=("cpu",), dtypes=("f32",), origin="space")
    with pytest.raises(JobRefused, match="is not a Hub model id"):
        queue.submit(request)


def test_unverified_variant_is_not_published(fake_hub, tmp_path, monkeypatch, capsys):
    """Without transformers the default f32 variant has no reference but itself: never a PR."""
    for name in ("torch", "transformers"):
        monkeypatch.setitem(sys.modules, name, None)
    fake_hub.add_token(BOT_TOKEN, BOT)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-llama"
    fake_hub.add_repo(repo_id, {p.name: p.read_bytes() for p in TINY.iterdir()})
    argv = ["convert", repo_id, "--ep", "default", "--dtype", "f32", "--publish", "pr"]
    assert main([*argv, "--output", str(tmp_path), "--json", "--no-progress"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["reports"]["onnx/default-f32"]["status"] == "unverified"
    assert result["failed"] == ["onnx/default-f32"] and result["url"] is None
    assert fake_hub.repos[repo_id].pull_requests() == []
