"""The job queue: embedded (SQLite) and Redis (a real `redis-server` on a loopback port), with
fake runners from tests/job_runners.py; a worker process killed mid-job and replaced."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from mobius.cli import main as mobius_cli
from pipeline.admission import Checkpoint, JobRefused, probe_checkpoint
from pipeline.jobs import (
    ConversionRequest,
    Job,
    JobQueue,
    Limits,
)
from tests.hub_server import FakeHub
from tests.job_runners import ledger_rows

ROOT = Path(__file__).resolve().parents[1]
SHA = "5" * 40
_spec = importlib.util.spec_from_file_location("bench_fleet", ROOT / "bench" / "fleet.py")
assert _spec is not None and _spec.loader is not None
fleet = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fleet)


def request(
    source: str = "org/tiny", requester: str = "alice", **kwargs: object
) -> ConversionRequest:
    fields: dict[str, Any] = {
        "eps": ("cpu",),
        "dtypes": ("f32", "int4"),
        "origin": "space",
        **kwargs,
    }
    return ConversionRequest(source, requester=requester, **fields)


def probe(size: int = 1000) -> Callable[[ConversionRequest], Checkpoint]:
    return lambda req, read_as: Checkpoint(size, SHA)


def wait_for(queue: JobQueue, job_id: str, timeout: float = 30.0, **want: object) -> Job:
    """Poll until the job is finished (or matches `want`, e.g. state="running")."""
    deadline = time.monotonic() + timeout
    while True:
        job = queue.get(job_id)
        if want and all(getattr(job, k) == v for k, v in want.items()):
            return job
        if not want and job.state in ("succeeded", "failed"):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} is {job.state}; log: {job.log}")
        time.sleep(0.05)


# -- Redis: a real server per test session ------------------------------------------------------
@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server is not installed (Debian: apt-get install -y redis-server)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder = tmp_path_factory.mktemp("redis")
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(
        [exe, *args, "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 15
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"redis-server did not start on port {port}")
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def redis_url(redis_server: str) -> str:
    redis.Redis.from_url(redis_server).flushall()
    return redis_server


@pytest.fixture(params=["sqlite", "redis"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """JobQueue arguments for each backend."""
    if request.param == "redis":
        return {"redis_url": request.getfixturevalue("redis_url")}
    return {"data_dir": str(tmp_path / "jobs")}


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path / "ledger.db")
    monkeypatch.setenv("MOBIUS_TEST_LEDGER", path)
    return path


# -- submit and run -----------------------------------------------------------------------------
def test_submit_runs_to_success(where: dict[str, str]) -> None:
    queue = JobQueue(**where, runner="tests.job_runners:quick", probe=probe())
    job_id = queue.submit(request())
    assert queue.get(job_id).state == "queued"
    with queue.worker():
        job = wait_for(queue, job_id)
    assert job.state == "succeeded", job.error
    assert job.result == {
        "url": "https://hub.test/org/tiny/discussions/1",
        "variants": {"cpu-f32": {"max_abs_diff": 0.0}, "cpu-int4": {"max_abs_diff": 0.0}},
    }
    assert (job.stage, job.attempts, job.error, job.revision) == ("publish", 1, None, SHA)
    assert f"resolved org/tiny at {SHA}" in job.log  # the runner builds the resolved commit
    assert [e["stage"] for e in job.progress if e["variant"] is None] == [
        "resolve",
        "build",
        "publish",
    ]
    built = [(e["variant"], e["percent"]) for e in job.progress if e["variant"]]
    assert built == [("cpu-f32", 50), ("cpu-f32", 100), ("cpu-int4", 50), ("cpu-int4", 100)]
    assert all(e["stage"] == "build" for e in job.progress if e["variant"])
    assert job.created_at <= job.started_at <= job.finished_at  # type: ignore[operator]
    assert [j.id for j in queue.recent()] == [job_id]
    assert queue.active() == []
    # the same request once more: already done at this commit
    assert queue.submit(request()) == job_id


def test_failing_runner(tmp_path: Path) -> None:
    queue = JobQueue(tmp_path, runner="tests.job_runners:failing", probe=probe())
    crash = JobQueue(tmp_path, runner="tests.job_runners:crashing", probe=probe())
    job_id = queue.submit(request())
    with queue.worker():
        job = wait_for(queue, job_id)
    assert (job.state, job.stage, job.result, job.attempts) == ("failed", "build", None, 1)
    assert job.error == "config.json of 'org/tiny' has no model_type (a model repo?)"
    assert "building" in job.log
    assert job.log[-1] == f"failed: {job.error}"
    # a failed job does not block a new try
    retry_id = crash.submit(request())
    assert retry_id != job_id
    with crash.worker():
        job = wait_for(crash, retry_id)
    assert job.error == "internal error (KeyError): 'num_hidden_layers'"


def test_duplicate_while_queued_or_running_is_one_job(
    where: dict[str, str], ledger: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = JobQueue(**where, runner="tests.job_runners:slow", probe=probe())
    job_id = queue.submit(request())
    assert queue.submit(request()) == job_id
    assert queue.submit(request(eps=["cpu"], dtypes=["int4", "f32"])) == job_id  # same variants
    assert queue.submit(request(dtypes=["f32"])) != job_id  # other variants: another job
    assert queue.huey.pending_count() == 2
    monkeypatch.setenv("MOBIUS_TEST_PAUSE", "0.5")
    with queue.worker():
        wait_for(queue, job_id, state="running")
        assert queue.submit(request()) == job_id
    assert [row[0] for row in ledger_rows(ledger, "runs")].count(request().key(SHA)) == 1


def test_over_size_request_is_refused(tmp_path: Path) -> None:
    queue = JobQueue(tmp_path, probe=probe(3 * 10**9), limits=Limits(max_checkpoint_bytes=10**9))
    with pytest.raises(JobRefused) as refused:
        queue.submit(request())
    assert str(refused.value) == (
        "'org/tiny' has 2.8 GiB to download; this service converts checkpoints up to 953.7 MiB"
    )
    assert queue.recent() == [] and queue.huey.pending_count() == 0


def test_rate_limit_per_requester(tmp_path: Path) -> None:
    queue = JobQueue(tmp_path, probe=probe(), limits=Limits(rate=2, rate_window_s=3600))
    first = queue.submit(request("org/a"))
    queue.submit(request("org/b"))
    assert queue.submit(request("org/a")) == first  # a duplicate is not a new submission
    with pytest.raises(JobRefused) as refused:
        queue.submit(request("org/c"))
    assert str(refused.value) == (
        "'alice' has submitted 2 conversions in the last 1 hour; the limit is 2 per 1 hour: "
        "try again later"
    )
    queue.submit(request("org/c", requester="bob"))
    assert len(queue.recent()) == 3 and queue.huey.pending_count() == 3


def test_remote_requests_name_hub_repos_only(tmp_path: Path) -> None:
    queue = JobQueue(tmp_path, probe=probe())
    folder = str(tmp_path)  # exists, but only the CLI may name a folder
    with pytest.raises(JobRefused) as refused:
        queue.submit(request(folder, origin="github"))
    assert str(refused.value) == f"'{folder}' is not a Hub model id (namespace/name)"
    missing = os.path.relpath(tmp_path / "missing")  # a `..`-style path that does not exist
    with pytest.raises(JobRefused, match="is not a local folder or a Hub model id"):
        queue.submit(request(missing, origin="cli"))
    assert queue.recent() == []


def test_probe_reads_the_hub(fake_hub: FakeHub, tmp_path: Path) -> None:
    repo_id = f"mobius-tests/{uuid.uuid4().hex[:10]}"
    sha = fake_hub.add_repo(
        repo_id,
        {"config.json": b"{}", "model.safetensors": b"x" * 3000, "sub/x.safetensors": b"y" * 99},
    )
    assert probe_checkpoint(request(repo_id)) == Checkpoint(3002, sha)  # weights + config.json
    queue = JobQueue(tmp_path, limits=Limits(max_checkpoint_bytes=2000))
    with pytest.raises(JobRefused, match=r"has 2\.9 KiB to download"):
        queue.submit(request(repo_id))
    with pytest.raises(JobRefused, match="model repo 'mobius-tests/missing' not found"):
        queue.submit(request("mobius-tests/missing"))


def test_side_files_count_against_the_limit_and_junk_is_not_counted(
    fake_hub: FakeHub, tmp_path: Path
) -> None:
    """What the converter will download (weights and the known side files, each capped) is
    what the limit counts; files it never fetches do not count."""
    repo_id = f"mobius-tests/{uuid.uuid4().hex[:10]}"
    junk = b"j" * (1 << 20)
    files = {
        "config.json": b"{}",
        "model.safetensors": b"x" * 1000,
        "tokenizer.json": b"t" * 5000,
        "tokenizer.junk": junk,
        "padding.model": junk,
    }
    sha = fake_hub.add_repo(repo_id, files)
    assert probe_checkpoint(request(repo_id)) == Checkpoint(6002, sha)
    big = f"mobius-tests/{uuid.uuid4().hex[:10]}"
    fake_hub.add_repo(big, {**files, "tokenizer.json": b"t" * (65 * 1024 * 1024)})
    with pytest.raises(JobRefused, match=r"'tokenizer\.json' is .* over the .*-byte limit"):
        JobQueue(tmp_path).submit(request(big))


# -- recovery -------------------------------------------------------------------------------------
def _force(queue: JobQueue, job_id: str, **changes: object) -> None:
    with queue.store.tx() as tx:
        record = tx.get(job_id)
        assert record is not None
        tx.put({**record, **changes})


def test_recover_gives_up_after_max_attempts(tmp_path: Path) -> None:
    queue = JobQueue(tmp_path, probe=probe(), lease_s=5, limits=Limits(max_attempts=2))
    job_id = queue.submit(request())
    queue.huey.flush()
    _force(queue, job_id, state="running", stage="build", attempts=2, heartbeat_at=time.time() - 6)
    assert queue.recover() == []
    job = queue.get(job_id)
    assert job.state == "failed"
    assert job.error == (
        "the worker stopped during stage build; the job was started 2 times and is not retried "
        "again (it may need more memory or time than a worker has)"
    )


def test_recover_resends_a_lost_message(tmp_path: Path) -> None:
    queue = JobQueue(tmp_path, probe=probe(), lease_s=5)
    job_id = queue.submit(request())
    assert queue.recover() == []  # queued and in huey's queue
    queue.huey.flush()  # the message is gone, e.g. dequeued by a worker that then died
    assert queue.recover() == []  # not yet: a worker may be about to claim it
    _force(queue, job_id, queued_at=time.time() - 6)
    assert queue.recover() == [job_id]
    assert queue.huey.pending_count() == 1
    assert queue.get(job_id).log[-1] == "its queue message was lost; re-queued"


# -- many workers ---------------------------------------------------------------------------------
def test_two_workers_on_one_redis_queue_run_each_job_once(redis_url: str, ledger: str) -> None:
    submitter = JobQueue(redis_url=redis_url, probe=probe(), limits=Limits(rate=None))
    workers = [JobQueue(redis_url=redis_url, runner="tests.job_runners:slow") for _ in range(2)]
    with workers[0].worker() as first, workers[1].worker() as second:
        ids = [submitter.submit(request(f"org/model-{i}")) for i in range(6)]
        jobs = [wait_for(submitter, job_id) for job_id in ids]
    assert [j.state for j in jobs] == ["succeeded"] * 6
    assert {j.worker_id for j in jobs} <= {first, second}
    keys = sorted(row[0] for row in ledger_rows(ledger, "runs"))
    assert keys == sorted(j.key for j in jobs)  # each job ran exactly once
    assert len(ledger_rows(ledger, "prs")) == 6


def test_worker_processes_on_one_redis_queue_run_each_job_once(
    redis_url: str, ledger: str, tmp_path: Path
) -> None:
    """bench/fleet.py at a test's size: two `mobius worker` processes, six jobs."""
    models = fleet.sources(tmp_path / "models", 6)
    result = fleet.run_fleet(redis_url, models, 2, "tests.job_runners:slow", tmp_path, 120)
    assert (result["succeeded"], result["started_once"]) == (6, 6), result
    runs = [row[0] for row in ledger_rows(ledger, "runs")]
    assert len(runs) == len(set(runs)) == 6  # and the runner itself ran each job once


def test_killed_worker_process_is_replaced_and_one_pr_opened(
    where: dict[str, str], ledger: str, tmp_path: Path
) -> None:
    queue = JobQueue(**where, probe=probe())
    where_args = [f"--{k.replace('_', '-')}={v}" for k, v in where.items()]
    env = {**os.environ, "MOBIUS_TEST_PAUSE": "2"}
    log_file = (tmp_path / "workers.log").open("ab")

    def start_worker() -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "mobius", "worker", *where_args]
        command += ["--runner", "tests.job_runners:slow", "--lease", "1.5"]
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log_file, stderr=log_file)

    first = start_worker()
    second = None
    try:
        job_id = queue.submit(request())
        deadline = time.monotonic() + 30
        while not ledger_rows(ledger, "prs"):  # the first attempt opened its PR...
            assert time.monotonic() < deadline, (tmp_path / "workers.log").read_text()
            time.sleep(0.05)
        assert queue.get(job_id).state == "running"  # ...and is still running
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert queue.get(job_id).state == "running"
        second = start_worker()
        job = wait_for(queue, job_id, timeout=45)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(15)
        log_file.close()
    assert job.state == "succeeded", job.error
    assert job.attempts == 2
    prs = ledger_rows(ledger, "prs")
    assert len(prs) == 1 and job.result == {"url": prs[0][1]}
    assert len(ledger_rows(ledger, "runs")) == 2
    assert any("stopped during stage publish; re-queued" in line for line in job.log)
    assert f"pull request already open: {prs[0][1]}" in job.log


def test_jobs_listing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queue = JobQueue(tmp_path, probe=probe())
    job_id = queue.submit(request())
    assert mobius_cli(["jobs", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith(f"{job_id}  queued     -           0")
    assert "org/tiny [cpu-f32,cpu-int4] -> pr by alice" in out[1]
    assert mobius_cli(["jobs", "--data-dir", str(tmp_path), job_id]) == 0
    assert f'"id": "{job_id}"' in capsys.readouterr().out
    assert mobius_cli(["jobs", "--data-dir", str(tmp_path), "nope"]) == 1
    assert "no job 'nope'" in capsys.readouterr().err
