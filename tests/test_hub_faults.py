"""Hub faults at each injection point (download, preupload, LFS upload, commit): a transient one
is retried and the download or publish succeeds; a persistent one fails with one line naming the
step, and nothing is published. The real huggingface_hub client against the loopback Hub, whose
`faults` plan injects them (tests/hub_faults.py)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import huggingface_hub.constants
import huggingface_hub.file_download
import huggingface_hub.utils._http
import pytest

from converter.errors import ConfigError, SourceError
from converter.hub_retry import RetryPolicy, use_timeout
from converter.source import resolve_source
from pipeline.jobs import ConversionRequest, JobQueue, Limits
from pipeline.publish import PublishError, PublishTarget
from tests.hub_faults import Faults
from tests.hub_server import FakeHub
from tests.test_jobs import wait_for
from tests.test_publish import BOT, BOT_TOKEN, TINY, Source, new_user

ATTEMPTS = 3
TIMEOUT_S = 0.3  # the client's request timeout here; a "timeout" fault stays silent longer


class _NoWaits:
    """The client's `time` module without its sleeps: it backs off for seconds on its own."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def faults(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> Iterator[Faults]:
    """The loopback Hub's fault plan, emptied after the test; short timeouts, 3 attempts."""
    monkeypatch.setenv("MOBIUS_HUB_ATTEMPTS", str(ATTEMPTS))
    monkeypatch.setenv("MOBIUS_HUB_TIMEOUT_S", str(TIMEOUT_S))
    for name in ("HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT"):  # the client's, for files
        monkeypatch.setattr(huggingface_hub.constants, name, TIMEOUT_S)
    no_waits = _NoWaits()
    monkeypatch.setattr(huggingface_hub.utils._http, "time", no_waits)
    monkeypatch.setattr(huggingface_hub.file_download, "time", no_waits)
    monkeypatch.setattr(fake_hub.faults, "hang_s", 1.0)
    yield fake_hub.faults
    fake_hub.faults.clear()
    monkeypatch.delenv("MOBIUS_HUB_TIMEOUT_S")
    use_timeout(RetryPolicy.from_env().timeout_s)  # later tests' Hub calls get the default


@pytest.fixture(scope="module")
def packaged(fake_hub: FakeHub, tmp_path_factory: pytest.TempPathFactory) -> Source:
    """tiny-llama on the loopback Hub with its cpu-f32 package, built once for the module."""
    fake_hub.add_token(BOT_TOKEN, BOT)
    return Source(fake_hub, tmp_path_factory.mktemp("faults"), (("cpu", "f32"),))


@pytest.fixture
def source(packaged: Source, fake_hub: FakeHub) -> Source:
    """`packaged` with its repo as new: no PR, main at the commit the package was built from."""
    del fake_hub.repos[packaged.repo_id]
    assert fake_hub.add_repo(packaged.repo_id, packaged.files) == packaged.sha
    return packaged


def retries_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mobius.hub"]


def assert_nothing_published(source: Source) -> None:
    assert source.repo.discussions == []
    assert source.repo.refs == {"main": source.sha}


# -- publishing: transient faults -----------------------------------------------------------
# The client retries the preupload and each LFS PUT itself (6 tries, its waits skipped here),
# never the commit: a fault met 6 times in a row reaches mobius's retry. LFS uploads run in
# parallel and share the fault, so whose retry absorbs it there is left open (None).
@pytest.mark.parametrize(
    ("route", "kind", "times", "mobius_retries"),
    [
        ("preupload", "503", 6, True),
        ("preupload", "drop", 6, True),
        ("preupload", "timeout", 1, False),
        ("lfs", "500", 6, None),
        ("lfs", "drop", 6, None),
        ("lfs", "timeout", 1, None),
        ("commit", "503", 2, True),
        ("commit", "drop", 2, True),
        ("commit", "timeout", 1, True),
    ],
)
def test_transient_fault_is_retried_and_the_pull_request_opens(
    route: str,
    kind: str,
    times: int,
    mobius_retries: bool | None,
    source: Source,
    faults: Faults,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="mobius.hub")
    fault = faults.add(route, kind, times=times)
    published = source.publish(PublishTarget("pr"))
    assert (published.outcome, published.reused) == ("opened", False)
    assert fault.hits == times
    [pr] = source.repo.discussions
    assert published.url.endswith(f"/discussions/{pr.num}")
    assert "onnx/cpu-f32/model.onnx" in source.repo.files(pr.ref)
    if mobius_retries is not None:
        retried = [line for line in retries_logged(caplog) if f"the {route} failed" in line]
        assert bool(retried) == mobius_retries


def test_look_ups_around_the_upload_are_retried(
    source: Source, faults: Faults, caplog: pytest.LogCaptureFixture
) -> None:
    """The client never retries the look-up of existing PRs: mobius does."""
    caplog.set_level(logging.WARNING, logger="mobius.hub")
    fault = faults.add("discussions", "503", times=2)
    assert source.publish(PublishTarget("pr")).outcome == "opened"
    assert fault.hits == 2 and len(source.repo.discussions) == 1
    assert sum("the look-up failed" in line for line in retries_logged(caplog)) == 2


def test_rate_limited_commit_waits_as_asked(source: Source, faults: Faults) -> None:
    fault = faults.add("commit", "429", times=1, retry_after=0)
    assert source.publish(PublishTarget("pr")).outcome == "opened"
    assert fault.hits == 1 and len(source.repo.discussions) == 1


def test_retry_after_beyond_the_budget_gives_up_at_once(
    source: Source, faults: Faults, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOBIUS_HUB_BUDGET_S", "5")
    fault = faults.add("commit", "429", retry_after=3600)
    with pytest.raises(PublishError, match=r"the commit failed once: .*HTTP 429.*5 s budget"):
        source.publish(PublishTarget("pr"))
    assert fault.hits == 1
    assert_nothing_published(source)


# -- publishing: a commit that landed although its answer was lost ---------------------------
def test_lost_commit_reply_is_not_committed_twice(
    source: Source, faults: Faults, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mobius.hub")
    fault = faults.add("commit", "lost-reply")  # every commit lands, no answer ever arrives
    published = source.publish(PublishTarget("pr"))
    assert fault.hits == 1  # sent once: before resending, mobius found the PR it had opened
    [pr] = source.repo.discussions
    assert published.url.endswith(f"/discussions/{pr.num}") and published.outcome == "opened"
    assert "the commit had succeeded on the Hub" in " ".join(retries_logged(caplog))


def test_lost_commit_reply_in_repo_mode_commits_once(
    source: Source, faults: Faults, fake_hub: FakeHub
) -> None:
    user, token = new_user(fake_hub)
    fault = faults.add("commit", "lost-reply", times=1)
    published = source.publish(PublishTarget("repo"), token=token)
    assert fault.hits == 1 and published.outcome == "created"
    export = fake_hub.repos[f"{user}/tiny-llama-ONNX"]
    assert len(export.commits) == 2  # the repo's first commit, and ours once
    assert "onnx/cpu-f32/model.onnx" in export.files()


# -- publishing: persistent faults ----------------------------------------------------------
@pytest.mark.parametrize(
    ("route", "kind", "step", "reason"),
    [
        ("preupload", "503", "preupload", "HTTP 503: injected fault"),
        ("preupload", "drop", "preupload", "the connection was dropped"),
        ("lfs", "503", "LFS upload", "HTTP 503: injected fault"),
        ("lfs", "drop", "LFS upload", "the connection was dropped"),
        ("commit", "503", "commit", "HTTP 503: injected fault"),
        ("commit", "drop", "commit", "the connection was dropped"),
        ("commit", "timeout", "commit", "no answer in time (ReadTimeout)"),
        ("look-up", "502", "look-up", "HTTP 502: injected fault"),
    ],
)
def test_persistent_fault_fails_naming_the_step_and_publishes_nothing(
    route: str, kind: str, step: str, reason: str, source: Source, faults: Faults
) -> None:
    faults.add(route, kind)
    with pytest.raises(PublishError) as err:
        source.publish(PublishTarget("pr"))
    message = str(err.value)
    assert "\n" not in message
    assert f"failed: the {step} failed {ATTEMPTS} times: " in message and reason in message
    assert_nothing_published(source)


def test_persistent_fault_in_repo_mode_leaves_no_repo(
    source: Source, faults: Faults, fake_hub: FakeHub
) -> None:
    user, token = new_user(fake_hub)
    faults.add("lfs", "503")
    with pytest.raises(PublishError, match=f"the LFS upload failed {ATTEMPTS} times"):
        source.publish(PublishTarget("repo"), token=token)
    assert f"{user}/tiny-llama-ONNX" not in fake_hub.repos  # created, then deleted again


@pytest.mark.parametrize(
    ("route", "kind", "reason"),
    [("commit", "403", "HTTP 403"), ("preupload", "401", "the Hub rejected the token")],
)
def test_client_errors_are_not_retried(
    route: str, kind: str, reason: str, source: Source, faults: Faults
) -> None:
    fault = faults.add(route, kind)
    with pytest.raises(PublishError, match=reason):
        source.publish(PublishTarget("pr"))
    assert fault.hits == 1
    assert_nothing_published(source)


# -- downloads ------------------------------------------------------------------------------
def tiny_repo(hub: FakeHub) -> str:
    repo_id = f"faults-{uuid.uuid4().hex[:8]}/tiny-llama"
    hub.add_repo(repo_id, {p.name: p.read_bytes() for p in TINY.iterdir()})
    return repo_id


# The client retries a file's HEAD on a status or timeout (7 tries), a GET's dropped body (6);
# never a GET answered 5xx, a HEAD whose connection dropped, nor the repo's info: those reach
# mobius's retry.
@pytest.mark.parametrize(
    ("route", "kind", "method", "mobius_retries"),
    [
        ("resolve", "503", "GET", True),
        ("resolve", "drop", "HEAD", True),
        ("look-up", "503", None, True),
        ("resolve", "503", "HEAD", False),
        ("resolve", "timeout", None, False),
        ("resolve", "drop", "GET", False),
    ],
)
def test_transient_download_fault_is_retried(
    route: str,
    kind: str,
    method: str | None,
    mobius_retries: bool,
    fake_hub: FakeHub,
    faults: Faults,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="mobius.hub")
    repo_id = tiny_repo(fake_hub)
    fault = faults.add(route, kind, times=1, method=method)
    source = resolve_source(repo_id, progress=False)
    assert fault.hits == 1
    weights = (source.path / "model.safetensors").read_bytes()
    assert weights == (TINY / "model.safetensors").read_bytes()
    assert bool(retries_logged(caplog)) == mobius_retries


@pytest.mark.parametrize(
    ("kind", "reason"), [("503", "HTTP 503"), ("drop", "the connection was dropped")]
)
def test_persistent_download_fault_fails_naming_the_download(
    kind: str, reason: str, fake_hub: FakeHub, faults: Faults
) -> None:
    repo_id = tiny_repo(fake_hub)
    faults.add("resolve", kind)
    with pytest.raises(SourceError) as err:
        resolve_source(repo_id, progress=False)
    message = str(err.value)
    assert "\n" not in message and f"cannot fetch '{repo_id}' from {fake_hub.url}" in message
    assert f"the download failed {ATTEMPTS} times: " in message and reason in message


# -- the job --------------------------------------------------------------------------------
def run_job(hub: FakeHub, tmp: Path, monkeypatch: pytest.MonkeyPatch, repo_id: str):
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    queue = JobQueue(
        tmp / "jobs",
        runner="pipeline.convert:run",
        limits=Limits(rate=None),
        scratch_dir=tmp / "scratch",  # not /tmp, where other queues clear folders they don't know
    )
    request = ConversionRequest(
        source=repo_id, eps=("cpu",), dtypes=("f32",), requester="alice", origin="space"
    )
    with queue.worker():
        return wait_for(queue, queue.submit(request), timeout=120)


def test_job_succeeds_through_transient_faults_at_every_step(
    fake_hub: FakeHub, faults: Faults, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_hub.add_token(BOT_TOKEN, BOT)
    repo_id = tiny_repo(fake_hub)
    plan = [
        faults.add("discussions", "503", times=1),  # is there a PR already? (before converting)
        faults.add("resolve", "503", times=1, method="GET"),
        faults.add("preupload", "503", times=6),
        faults.add("lfs", "drop", times=2),
        faults.add("commit", "lost-reply", times=1),
    ]
    job = run_job(fake_hub, tmp_path, monkeypatch, repo_id)
    assert job.state == "succeeded", job.error
    assert [f.hits for f in plan] == [f.times for f in plan]
    [pr] = fake_hub.repos[repo_id].discussions
    assert job.result["url"].endswith(f"/discussions/{pr.num}")


@pytest.mark.parametrize(("route", "step"), [("resolve", "download"), ("commit", "commit")])
def test_job_fails_with_one_line_naming_the_step(
    route: str,
    step: str,
    fake_hub: FakeHub,
    faults: Faults,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_hub.add_token(BOT_TOKEN, BOT)
    repo_id = tiny_repo(fake_hub)
    sha = fake_hub.repos[repo_id].refs["main"]
    faults.add(route, "503")
    job = run_job(fake_hub, tmp_path, monkeypatch, repo_id)
    assert job.state == "failed" and "\n" not in job.error
    assert f"the {step} failed {ATTEMPTS} times: the Hub answered HTTP 503" in job.error
    assert fake_hub.repos[repo_id].discussions == []
    assert fake_hub.repos[repo_id].refs == {"main": sha}


# -- the policy -----------------------------------------------------------------------------
def test_policy_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOBIUS_HUB_ATTEMPTS", "7")
    monkeypatch.setenv("MOBIUS_HUB_TIMEOUT_S", "2.5")
    policy = RetryPolicy.from_env()
    assert (policy.attempts, policy.timeout_s) == (7, 2.5)
    waits = [policy.wait(n, None) for n in (1, 2, 3)]
    assert all(c / 2 <= w <= c for w, c in zip(waits, (0.01, 0.02, 0.04), strict=True))
    assert policy.wait(1, 3.0) == 3.0  # Retry-After, when longer than the backoff
    for name, value in (("MOBIUS_HUB_ATTEMPTS", "0"), ("MOBIUS_HUB_TIMEOUT_S", "soon")):
        monkeypatch.setenv(name, value)
        with pytest.raises(ConfigError, match=name):
            RetryPolicy.from_env()
        monkeypatch.delenv(name)
