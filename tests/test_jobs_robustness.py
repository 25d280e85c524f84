"""What a worker leaves behind and how a broken job store is reported: scratch folders of dead
attempts are removed, a corrupt or read-only SQLite store is one line naming the file."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
import zipfile
from contextlib import closing
from pathlib import Path

import pytest

from pipeline.jobs import SCRATCH_PREFIX, ConversionRequest, JobQueue, Limits
from pipeline.store import StoreError
from tests.test_jobs import _force, probe, wait_for

REPO = Path(__file__).parents[1]


def request(**kwargs: object) -> ConversionRequest:
    fields: dict[str, object] = {"eps": ("cpu",), "dtypes": ("f32",), "origin": "space"}
    return ConversionRequest("org/model", requester="alice", **(fields | kwargs))  # type: ignore[arg-type]


def seen_workdirs(request: ConversionRequest, reporter) -> dict:
    """A runner that leaves a file in its work folder and reports where it worked."""
    (reporter.workdir / "partial.onnx.data").write_bytes(b"x" * 1000)
    assert sorted(reporter.workdir.iterdir()) == [reporter.workdir / "partial.onnx.data"]
    return {"workdir": str(reporter.workdir)}


# -- scratch folders ------------------------------------------------------------------------------
def test_an_attempt_works_in_its_own_folder_which_is_removed_after(tmp_path: Path) -> None:
    queue = JobQueue(
        tmp_path / "jobs", runner=seen_workdirs, probe=probe(), scratch_dir=tmp_path / "tmp"
    )
    with queue.worker():
        job = wait_for(queue, queue.submit(request()))
    workdir = Path(job.result["workdir"])
    assert job.state == "succeeded" and workdir.name == f"{SCRATCH_PREFIX}{job.id}"
    assert not workdir.exists()


def test_a_dead_workers_scratch_folder_is_removed_by_the_next_attempt_and_at_start(
    tmp_path: Path,
) -> None:
    scratch = tmp_path / "tmp"
    queue = JobQueue(
        tmp_path / "jobs", runner=seen_workdirs, probe=probe(), scratch_dir=scratch, lease_s=5
    )
    job_id = queue.submit(request())
    _force(queue, job_id, state="running", attempts=1, heartbeat_at=time.time())
    left = scratch / f"{SCRATCH_PREFIX}{job_id}"  # what the killed attempt wrote (GBs for 8B)
    left.mkdir(parents=True)
    (left / "model.onnx.data").write_bytes(b"y" * 5000)
    unrelated = scratch / "someone-else"
    unrelated.mkdir()
    stray = scratch / f"{SCRATCH_PREFIX}feedfacefeedface"  # a job this store does not know
    stray.mkdir()
    assert queue.sweep() == [stray]  # a job whose worker still heartbeats keeps its folder
    assert left.is_dir()
    _force(queue, job_id, heartbeat_at=time.time() - 60)  # its worker died
    with queue.worker():  # recovers the job, sweeps, and runs it again
        job = wait_for(queue, job_id, timeout=30)
    assert job.state == "succeeded" and job.attempts == 2
    assert not left.exists() and unrelated.is_dir()


def test_queues_on_one_machine_keep_their_scratch_folders_apart(tmp_path: Path) -> None:
    """Each queue's default scratch folder is named after its store: one queue's start-up sweep
    never removes a folder of a job another queue on the same machine is running."""
    mine = JobQueue(tmp_path / "a", runner=seen_workdirs, probe=probe())
    other = JobQueue(tmp_path / "b", runner=seen_workdirs, probe=probe())
    assert mine.scratch_dir != other.scratch_dir
    assert JobQueue(tmp_path / "a", runner=seen_workdirs, probe=probe()).scratch_dir == (
        mine.scratch_dir
    )
    running = other.scratch_dir / f"{SCRATCH_PREFIX}feedfacefeedface"
    running.mkdir(parents=True)
    try:
        assert mine.sweep() == [] and running.is_dir()
    finally:
        shutil.rmtree(other.scratch_dir, ignore_errors=True)
        shutil.rmtree(mine.scratch_dir, ignore_errors=True)


def test_a_new_attempt_starts_in_an_empty_folder(tmp_path: Path) -> None:
    """A leftover that appears after the worker's start-up sweep (another machine's worker
    died on a shared scratch disk) is removed by the attempt itself."""
    scratch = tmp_path / "tmp"
    queue = JobQueue(tmp_path / "jobs", runner=seen_workdirs, probe=probe(), scratch_dir=scratch)
    with queue.worker():
        job_id = queue.submit(request(), read_as=False)
        wait_for(queue, job_id)
        left = scratch / f"{SCRATCH_PREFIX}{job_id}"
        left.mkdir(parents=True)
        (left / "stale.bin").write_bytes(b"z")
        _force(queue, job_id, state="queued", result=None)
        queue.huey.enqueue(queue._enqueue.s(job_id))
        job = wait_for(queue, job_id, state="succeeded", attempts=2)
    assert not left.exists() and job.error is None


def test_download_only_job_keeps_an_archive_of_packages_and_card(fake_hub, tmp_path: Path) -> None:
    files = {p.name: p.read_bytes() for p in (REPO / "examples/tiny-llama").iterdir()}
    fake_hub.add_repo("org-archive/tiny-llama", files)
    queue = JobQueue(tmp_path / "jobs", runner="pipeline.convert:run", limits=Limits(rate=None))
    req = ConversionRequest(
        "org-archive/tiny-llama", ("cpu",), ("f32",), publish="none", origin="space"
    )
    with queue.worker():
        job = wait_for(queue, queue.submit(req), timeout=180)
    assert job.state == "succeeded", job.error
    archive = Path(job.result["archive"])
    assert archive.parent == queue.results_dir / job.id
    with zipfile.ZipFile(archive) as zf:
        names = set(zf.namelist())
    assert {"onnx/README.md", "onnx/cpu-f32/model.onnx", "onnx/cpu-f32/mobius.json"} <= names
    assert "output" not in job.result and "card" not in job.result  # no worker paths
    shown = "\n".join(job.log)
    assert SCRATCH_PREFIX not in shown and str(queue.scratch_dir) not in shown


# -- a broken store -------------------------------------------------------------------------------
def _jobs_cli(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mobius", "jobs", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


@pytest.mark.parametrize("name", ["jobs.db", "queue.db"])
def test_a_corrupt_store_is_one_line_naming_the_file(tmp_path: Path, name: str) -> None:
    data = tmp_path / "jobs"
    data.mkdir()
    (data / name).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=rf"{data / name} is corrupt"):
        JobQueue(data)
    done = _jobs_cli(data)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"mobius jobs: {data / name} is corrupt (not an SQLite database): "
        "move it aside to start afresh"
    ]


def test_a_read_only_store_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """chattr +i makes the file immutable even for root (the tests run as root)."""
    data = tmp_path / "jobs"
    queue = JobQueue(data, probe=probe())
    queue.submit(request())
    db = data / "jobs.db"
    with closing(sqlite3.connect(db)) as conn:  # fold the write-ahead log in (`queue` keeps it)
        conn.execute("pragma wal_checkpoint(truncate)")
    for suffix in ("-wal", "-shm"):  # so only the file is read
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    subprocess.run(["chattr", "+i", str(db)], check=True)
    try:
        with pytest.raises(StoreError, match=rf"{db} is read-only"):
            JobQueue(data, probe=probe()).submit(request(dtypes=("int4",)))
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True)


def test_a_package_that_cannot_be_written_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """A full disk surfaces as a bare short write from numpy ("16384 requested and 3072
    written"); here a file size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes the same short write."""
    out = tmp_path / "out"
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))\n"
        "from mobius.cli import main\n"
        f"sys.exit(main(['build', '--model', 'examples/tiny-llama', '--output', {str(out)!r},"
        " '--no-progress']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"mobius: error: writing the package to {out} failed (")
    assert "it needs about" in line and "free" in line
    assert list(out.iterdir()) == []  # no half-written package
