"""Many workers on one Redis: 1, 2 and 4 `mobius worker` processes against one queue.

A redis-server on a free loopback port (Debian's `redis-server`, persistence off); for each
fleet size the queue is emptied, `--jobs` conversions of copies of examples/tiny-llama (cpu/f32,
validated against transformers, nothing published) are queued, the workers are started and
stopped once every job finished. Reports per fleet size the wall time from starting the workers
(imports included), jobs per minute from the first job's start to the last one's end, the median
job's time, and checks from the job store that every job succeeded and was started exactly
once. See docs/benchmarks.md.

    python bench/fleet.py [--workers 1,2,4] [--jobs 20] [--runner module:function] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.jobs import DEFAULT_RUNNER, ConversionRequest, JobQueue, Limits  # noqa: E402

TINY = REPO / "examples" / "tiny-llama"


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A redis-server on a free loopback port, persistence off; yields its URL."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(
        [exe, *args, "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client, deadline = redis.Redis.from_url(url), time.monotonic() + 15
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {port}") from None
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def sources(folder: Path, n: int) -> list[Path]:
    """`n` copies of the tiny Llama: distinct requests (one folder is one dedupe key)."""
    copies = []
    for i in range(n):
        copy = folder / f"tiny-llama-{i:02d}"
        if not copy.is_dir():
            shutil.copytree(TINY, copy)
        copies.append(copy)
    return copies


def run_fleet(
    url: str, models: list[Path], workers: int, runner: str, work: Path, timeout_s: float = 1800
) -> dict[str, Any]:
    """Queue one cpu/f32 job per folder in `models`, run `workers` worker processes until all
    finished; the figures and, from the job store, how often each job was started."""
    redis.Redis.from_url(url).flushall()
    queue = JobQueue(redis_url=url, limits=Limits(rate=None, max_checkpoint_bytes=None))
    ids = [
        queue.submit(ConversionRequest(str(m), ("cpu",), ("f32",), publish="none")) for m in models
    ]
    scratch = work / f"scratch-{workers}"  # a temp dir of their own: no other sweep touches it
    scratch.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TMPDIR": str(scratch), "MOBIUS_RESULTS_DIR": str(work / "results")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "mobius", "worker", "--redis-url", url, "--runner", runner]
    log_path = work / f"workers-{workers}.log"
    with log_path.open("wb") as log:
        started = time.time()
        procs = [
            subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=log)
            for _ in range(workers)
        ]
        try:
            deadline = time.monotonic() + timeout_s
            while any(job.state in ("queued", "running") for job in queue.active()):
                if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                    raise RuntimeError(f"workers stopped or timed out; see {log_path}")
                time.sleep(0.2)
            wall = time.time() - started
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                proc.wait(60)
    jobs = [queue.get(job_id) for job_id in ids]
    starts = Counter(job.id for job in jobs for line in job.log if line.startswith("attempt "))
    first = min(job.started_at or wall for job in jobs)
    last = max(job.finished_at or 0.0 for job in jobs)
    return {
        "workers": workers,
        "jobs": len(jobs),
        "succeeded": sum(job.state == "succeeded" for job in jobs),
        "started_once": sum(starts[job.id] == 1 and job.attempts == 1 for job in jobs),
        "workers_used": len({job.worker_id for job in jobs}),
        "wall_s": wall,
        "jobs_per_min": 60 * len(jobs) / (last - first),
        # a worker's first job also imports torch and transformers (seconds of CPU)
        "median_job_s": statistics.median((j.finished_at or 0) - (j.started_at or 0) for j in jobs),
        "errors": sorted({job.error for job in jobs if job.error}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="fleet sizes (default 1,2,4)")
    parser.add_argument("--jobs", type=int, default=20, help="jobs per fleet size (default 20)")
    parser.add_argument("--runner", default=DEFAULT_RUNNER, help="the workers' --runner")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mobius-fleet-") as tmp:
        work = Path(tmp)
        (work / "redis").mkdir()
        models = sources(work / "models", args.jobs)
        with redis_server(work / "redis") as url:
            results = [
                run_fleet(url, models, int(n), args.runner, work) for n in args.workers.split(",")
            ]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        base = results[0]["jobs_per_min"]
        header = ("workers", "wall s", "jobs/min", "x", "job s", "once")
        print("{:>7}  {:>7}  {:>8}  {:>5}  {:>5}  {:>9}  used".format(*header))
        for r in results:
            print(
                f"{r['workers']:>7}  {r['wall_s']:>7.1f}  {r['jobs_per_min']:>8.1f}  "
                f"{r['jobs_per_min'] / base:>5.2f}  {r['median_job_s']:>5.2f}  "
                f"{r['started_once']:>4}/{r['jobs']:<4}  "
                f"{r['workers_used']}"
            )
    ok = all(r["succeeded"] == r["started_once"] == r["jobs"] for r in results)
    for r in results:
        for error in r["errors"]:
            print(f"{r['workers']} workers: a job failed: {error}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
