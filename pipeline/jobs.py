"""The conversion job queue: both front doors submit a `ConversionRequest`, workers run it.

    queue = JobQueue()                  # SQLite under ~/.cache/mobius/jobs, or Redis when
                                        # MOBIUS_REDIS_URL is set
    job_id = queue.submit(request, read_as=user_token)   # refused -> JobRefused
    with queue.worker():                # in-process worker threads (huey's Consumer)
        ...
    queue.get(job_id).state             # queued | running | succeeded | failed

huey carries only wake-up messages ("run job <id>"); the truth is the job record in
`pipeline.store`. A worker claims a job atomically (queued -> running), so a duplicate message is
harmless, and heartbeats it; any worker re-queues a running job whose heartbeat is older than the
lease (its worker died) and fails it after `Limits.max_attempts` starts. See docs/jobs.md.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import shutil
import signal
import socket
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from huey import RedisHuey, SqliteHuey
from huey.api import Huey
from huey.consumer import Consumer
from huey.registry import Message
from huey.serializer import Serializer
from huey.storage import SqliteStorage

from converter.errors import MobiusError
from converter.repo_files import is_repo_id
from model_cards import human_size
from pipeline.admission import Checkpoint, JobRefused, ReadAs, probe_checkpoint
from pipeline.memory import estimate_peak
from pipeline.request import ConversionRequest
from pipeline.store import (
    ACTIVE,
    Record,
    RedisStore,
    SqliteStore,
    Store,
    StoreError,
    Tx,
    explained,
)

State = Literal["queued", "running", "succeeded", "failed"]
STAGES = ("resolve", "build", "validate", "card", "publish")
DEFAULT_RUNNER = "pipeline.convert:run"
DEFAULT_LEASE_S = 120.0
SCRATCH_PREFIX = "mobius-job-"
KEEP_RESULTS_S = 7 * 86400.0
MAX_LOG_LINES = 5000
MAX_ERROR_CHARS = 2000
log = logging.getLogger("mobius.jobs")


class JobNotFound(MobiusError):
    """No job has this id."""


@dataclass
class Job:
    """A request's durable state. `progress`: events {at, stage, variant, percent, message};
    `log`: lines. Both span all attempts. `result`: what the runner returned (URLs, reports)."""

    id: str
    request: ConversionRequest
    key: str
    state: State = "queued"
    stage: str | None = None
    revision: str | None = None  # commit sha resolved at submission; None for local folders
    private: bool = False  # the source is private or gated: shown to its requester only
    estimated_peak: int | None = None  # bytes of memory (`pipeline.memory.estimate_peak`)
    waiting: str | None = None  # why a queued job was passed over by a worker
    result: dict[str, Any] | None = None
    error: str | None = None  # one paragraph for people, never a traceback
    attempts: int = 0
    worker_id: str | None = None
    created_at: float = 0.0
    queued_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    heartbeat_at: float | None = None
    progress: list[dict[str, Any]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "request": self.request.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any], events: list[Record] | None = None) -> Job:
        fields = {k: v for k, v in data.items() if k not in ("progress", "log")}
        job = cls(**{**fields, "request": ConversionRequest.from_dict(data["request"])})
        for event in events or []:
            if event["kind"] == "log":
                job.log.append(event["line"])
            else:
                job.progress.append({k: v for k, v in event.items() if k != "kind"})
        return job


@dataclass(frozen=True)
class Limits:
    """Checked at submission (size, rate) or by workers (concurrency, attempts).

    `rate` submissions per requester per `rate_window_s`; None turns a check off. A duplicate
    submission (answered with an existing job) does not count.
    """

    max_checkpoint_bytes: int | None = 20 * 10**9
    max_concurrent: int = 1
    rate: int | None = 10
    rate_window_s: float = 3600.0
    max_attempts: int = 3


class Reporter(Protocol):
    """What a runner reports while it works; recorded in the job. A queue worker's reporter
    also has `workdir` (an empty folder for this attempt, removed after it and by the next
    attempt) and `results` (a folder that outlives the job, for files its requester downloads).
    """

    def stage(self, name: str) -> None: ...
    def progress(self, variant: str | None, percent: float, message: str = "") -> None: ...
    def log(self, line: str) -> None: ...


Runner = Callable[[ConversionRequest, Reporter], dict[str, Any]]


def load_runner(spec: str | Runner) -> Runner:
    """A runner itself, or one named by import path `module:function`."""
    if callable(spec):
        return spec
    module, _, name = spec.partition(":")
    try:
        runner = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as err:
        raise MobiusError(f"cannot load job runner '{spec}': {err}") from err
    if not callable(runner):
        raise MobiusError(f"job runner '{spec}' is not callable")
    return runner


class _JsonSerializer(Serializer):
    """huey messages as JSON, not pickle: nothing that can write to the queue runs code."""

    def _serialize(self, data: Message) -> bytes:
        return json.dumps(data._asdict()).encode()

    def _deserialize(self, data: bytes) -> Message:
        return Message(**json.loads(data))


class _QueueFile(SqliteStorage):
    """huey's SQLite queue, whose commits do not wait for the disk (`synchronous=NORMAL`, as
    `pipeline.store.SqliteFile`'s): a submission holds the job store's turn while it enqueues."""

    def _create_connection(self) -> sqlite3.Connection:
        conn = super()._create_connection()
        conn.execute("pragma synchronous=normal")
        return conn


class _Consumer(Consumer):
    """huey's consumer, minus its signal handlers: the host process (a Space, `run_worker`) owns
    signals, and they can only be set from the main thread."""

    def _set_signal_handlers(self) -> None:
        pass


class JobQueue:
    """Submit, inspect and run conversion jobs.

    Storage: Redis when `redis_url` (or `MOBIUS_REDIS_URL`) is given, for many workers on many
    machines; else SQLite files under `data_dir` (or `MOBIUS_DATA_DIR`, else
    `~/.cache/mobius/jobs`), for workers on this machine. `runner`: the callable (or
    `module:function`) workers run; only workers need it. `probe`: measures a source at
    submission. `lease_s`: a running job whose heartbeat is older is taken to have lost its worker.
    `scratch_dir`: where attempts work (`mobius-job-<id>` folders; default a folder of the temp
    dir named after the store, so queues on one machine never sweep each other's);
    `results_dir`: files kept for requesters (default `<data_dir>/results`, or
    `$MOBIUS_RESULTS_DIR`, or `~/.cache/mobius/results` with Redis). `max_memory`: this worker's
    memory budget in bytes; it starts no job whose estimated peak, with those of the jobs it
    runs, is over it (the job stays queued for another worker).
    """

    def __init__(
        self,
        data_dir: Path | str | None = None,
        redis_url: str | None = None,
        runner: str | Runner = DEFAULT_RUNNER,
        limits: Limits | None = None,
        probe: Callable[[ConversionRequest, ReadAs], Checkpoint] = probe_checkpoint,
        lease_s: float = DEFAULT_LEASE_S,
        scratch_dir: Path | str | None = None,
        results_dir: Path | str | None = None,
        max_memory: int | None = None,
    ) -> None:
        self.limits, self.probe, self.lease_s = limits or Limits(), probe, lease_s
        self.max_memory = max_memory
        self._runner_spec = runner
        self.redis_url = redis_url or os.environ.get("MOBIUS_REDIS_URL") or None
        self.huey: Huey
        self.store: Store
        self.data_dir: Path | None
        if self.redis_url:
            self.data_dir = None
            self.huey = RedisHuey(
                "mobius", url=self.redis_url, results=False, serializer=_JsonSerializer()
            )
            self.store = RedisStore(self.redis_url)
        else:
            default = os.environ.get("MOBIUS_DATA_DIR") or Path.home() / ".cache/mobius/jobs"
            self.data_dir = Path(data_dir or default).expanduser()
            try:
                self.data_dir.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise StoreError(f"{self.data_dir} cannot be created: {err.strerror}") from err
            with explained(self.data_dir / "queue.db"):
                self.huey = SqliteHuey(
                    "mobius",
                    filename=str(self.data_dir / "queue.db"),
                    results=False,
                    serializer=_JsonSerializer(),
                    storage_class=_QueueFile,
                )
            self.store = SqliteStore(self.data_dir / "jobs.db")
        results = results_dir or os.environ.get("MOBIUS_RESULTS_DIR")
        if not results:
            results = self.data_dir / "results" if self.data_dir else "~/.cache/mobius/results"
        self.results_dir = Path(results).expanduser()
        self.scratch_dir = Path(scratch_dir) if scratch_dir else self._own_scratch()
        self._enqueue = self.huey.task(name="run_job")(self._execute)
        self._worker_id: str | None = None
        self._runner: Runner | None = None
        self._running: dict[str, int] = {}  # job id -> its estimated peak
        self._claiming = threading.Lock()

    # -- submitting and reading ------------------------------------------------------------------
    def submit(self, request: ConversionRequest, *, read_as: ReadAs = False) -> str:
        """Queue `request`; returns its job id. `read_as` is whose access to the source is
        checked (`pipeline.admission.ReadAs`; the default, anonymous, admits public repos only).
        The same request (see `ConversionRequest.key`) while queued or running, or already
        succeeded at the same commit, returns that job's id. Raises `JobRefused` (nothing
        queued) for a source the requester may not read, an unreviewed revision, or a limit."""
        _check_source(request)
        checkpoint = self.probe(request, read_as)
        if checkpoint.private and request.publish == "repo":
            _check_readable_export(request)
            request = replace(request, private=True)  # a private source's export stays private
        cap = self.limits.max_checkpoint_bytes
        if cap is not None and checkpoint.size > cap:
            raise JobRefused(
                f"'{request.source}' has {human_size(checkpoint.size)} to download; this service "
                f"converts checkpoints up to {human_size(cap)}"
            )
        key = request.key(checkpoint.revision, private=checkpoint.private)
        now = time.time()
        with self.store.tx() as tx:
            record = tx.latest(key)
            old = Job.from_dict(record) if record else None
            if old and (old.state in ACTIVE or self._still_answers(old)):
                return old.id
            self._check_rate(tx, request.requester, now)
            job = Job(
                uuid.uuid4().hex[:16],
                request,
                key,
                revision=checkpoint.revision,
                private=checkpoint.private,
                estimated_peak=estimate_peak(checkpoint.size, request.dtypes),
            )
            job.created_at = job.queued_at = now
            _save(tx, job, f"queued: {request.origin} request by {request.requester or '(cli)'}")
            with self._queue_errors():
                self._enqueue(job.id)  # inside the transaction: if it fails, no job is recorded
        return job.id

    def _still_answers(self, job: Job) -> bool:
        """A finished job answers a repeat of its request while what it made is still there:
        published (at a pinned commit), or, for a download, its files in `results_dir`."""
        if job.state != "succeeded" or not job.revision:
            return False
        return job.request.publish != "none" or (self.results_dir / job.id).is_dir()

    def _queue_errors(self) -> AbstractContextManager[None]:
        """The message queue's own SQLite file names itself in errors (Redis raises its own)."""
        return explained(self.data_dir / "queue.db") if self.data_dir else nullcontext()

    def get(self, job_id: str) -> Job:
        """The job with its progress events and log; `JobNotFound` if there is none."""
        with self.store.read() as tx:
            job = _load(tx, job_id, events=True)
        if job is None:
            raise JobNotFound(f"no job '{job_id}'")
        return job

    def recent(self, limit: int = 50) -> list[Job]:
        """The newest jobs first, without progress and log."""
        with self.store.read() as tx:
            return [Job.from_dict(r) for r in tx.recent(limit)]

    def active(self) -> list[Job]:
        """Queued and running jobs, oldest first, without progress and log."""
        with self.store.read() as tx:
            return sorted((Job.from_dict(r) for r in tx.active()), key=lambda j: j.created_at)

    def _check_rate(self, tx: Tx, requester: str, now: float) -> None:
        rate, window = self.limits.rate, self.limits.rate_window_s
        if rate is None:
            return
        count = tx.count_since(requester, now - window)
        if count >= rate:
            who = f"'{requester}'" if requester else "this requester"
            raise JobRefused(
                f"{who} has submitted {count} conversions in the last {_duration(window)}; "
                f"the limit is {rate} per {_duration(window)}: try again later"
            )

    # -- running ---------------------------------------------------------------------------------
    @contextmanager
    def worker(self, concurrency: int | None = None) -> Iterator[str]:
        """Run jobs in this process until the block ends: `concurrency` huey worker threads
        (default `limits.max_concurrent`) and a thread that heartbeats running jobs and recovers
        jobs of dead workers. Yields the worker id; leaving waits for running jobs to finish."""
        if self._worker_id is not None:
            raise RuntimeError("this JobQueue already runs a worker")
        self._runner = load_runner(self._runner_spec)
        self._worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        consumer = _Consumer(
            self.huey,
            workers=concurrency or self.limits.max_concurrent,
            worker_type="thread",
            periodic=False,
            max_delay=1.0,
        )
        stop = threading.Event()
        maintenance = threading.Thread(
            target=self._maintain, args=(stop,), name="mobius-jobs", daemon=True
        )
        try:
            self.recover()
            self.sweep()
            maintenance.start()
            consumer.start()
            try:
                yield self._worker_id
            finally:
                consumer.stop(graceful=True)
        finally:
            stop.set()
            if maintenance.is_alive():
                maintenance.join()
            self._worker_id = None

    def run_worker(self, concurrency: int | None = None) -> None:
        """`worker()` until SIGINT or SIGTERM: running jobs finish first; a second signal ends
        at once (another worker re-runs the job after the lease)."""
        stop = threading.Event()

        def handle(signum: int, frame: object) -> None:
            if stop.is_set():
                raise SystemExit(128 + signum)
            stop.set()

        previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            with self.worker(concurrency) as worker_id:
                budget = human_size(self.max_memory) if self.max_memory else "no"
                where = self.data_dir or "redis"
                log.info("worker %s consuming %s, %s memory budget", worker_id, where, budget)
                while not stop.wait(1.0):
                    pass
                log.info("worker %s stopping; waiting for running jobs", worker_id)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def recover(self) -> list[str]:
        """Re-queue running jobs whose heartbeat is older than the lease (their worker is gone),
        or fail them once they have been started `max_attempts` times; re-send the message of a
        queued job that huey no longer holds. Workers call this on start and every lease / 4.
        Returns the ids re-queued."""
        now, requeued = time.time(), []
        with self.store.tx() as tx:
            pending: set[str] | None = None
            for record in tx.active():
                job = Job.from_dict(record)
                if job.state == "running":
                    if now - (job.heartbeat_at or 0.0) <= self.lease_s:
                        continue
                    where = f"during stage {job.stage}" if job.stage else "before its first stage"
                    if job.attempts >= self.limits.max_attempts:
                        job.state, job.finished_at = "failed", now
                        job.error = (
                            f"the worker stopped {where}; the job was started {job.attempts} "
                            "times and is not retried again (it may need more memory or time "
                            "than a worker has)"
                        )
                        _save(tx, job, f"failed: {job.error}")
                        continue
                    note = f"worker {job.worker_id} stopped {where}; re-queued"
                    job.state, job.queued_at, job.worker_id = "queued", now, None
                else:
                    if now - job.queued_at <= self.lease_s:
                        continue
                    if pending is None:
                        pending = {str(t.args[0]) for t in self.huey.pending()}
                    if job.id in pending:
                        continue
                    job.queued_at = now
                    # a job passed over for want of memory is offered again, quietly
                    note = None if job.waiting else "its queue message was lost; re-queued"
                _save(tx, job, note)
                with self._queue_errors():
                    self._enqueue(job.id)
                requeued.append(job.id)
        return requeued

    def _own_scratch(self) -> Path:
        """A folder in the temp dir for this queue alone (named by its store): the sweep removes
        every `mobius-job-*` folder its store does not know, so two queues on one machine must
        not share one."""
        store = self.redis_url or str(self.data_dir.resolve())
        key = hashlib.sha256(store.encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"mobius-scratch-{key}"

    def sweep(self) -> list[Path]:
        """Remove what dead attempts left behind: `mobius-job-<id>` scratch folders of jobs that
        no live worker runs, and result files older than a week. Workers call this on start.
        Returns the folders removed."""
        removed = []
        now = time.time()
        for folder in self.scratch_dir.glob(f"{SCRATCH_PREFIX}*"):
            job_id = folder.name.removeprefix(SCRATCH_PREFIX)
            with self.store.read() as tx:
                job = _load(tx, job_id)
            alive = (
                job is not None
                and job.state == "running"
                and now - (job.heartbeat_at or 0.0) <= self.lease_s
            )
            if not alive and folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        for folder in self.results_dir.glob("*") if self.results_dir.is_dir() else []:
            if now - folder.stat().st_mtime > KEEP_RESULTS_S:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        return removed

    def _maintain(self, stop: threading.Event) -> None:
        while not stop.wait(self.lease_s / 4):
            try:
                self._heartbeat()
                self.recover()
            except Exception:
                log.exception("job maintenance failed; retrying")

    def _heartbeat(self) -> None:
        running = sorted(self._running)
        if not running:
            return
        with self.store.tx() as tx:
            for job_id in running:
                if job := self._owns(tx, job_id):
                    job.heartbeat_at = time.time()
                    _save(tx, job)

    def _execute(self, job_id: str) -> None:
        """The huey task: claim the job (if still queued), run it, record the outcome."""
        now = time.time()
        with self._claiming:  # a claim and its share of the memory budget: one at a time
            with self.store.tx() as tx:
                job = _load(tx, job_id)
                if job is None or job.state != "queued":
                    return  # a duplicate message: someone else has (or had) it
                if (note := self._over_budget(job)) is not None:
                    if note != job.waiting:  # small workers see it again and again: noted once
                        job.waiting = note
                        _save(tx, job, f"not started: {note}")
                    return  # stays queued: `recover` sends its message again after the lease
                job.state, job.stage, job.worker_id = "running", None, self._worker_id
                job.waiting = None
                job.attempts += 1
                job.started_at = job.heartbeat_at = now
                _save(tx, job, f"attempt {job.attempts} started on worker {self._worker_id}")
            self._running[job_id] = job.estimated_peak or 0
        request = replace(job.request, revision=job.revision or job.request.revision)
        assert self._runner is not None
        reporter = _JobReporter(self, job_id)
        shutil.rmtree(reporter.workdir, ignore_errors=True)  # an earlier attempt's leftovers
        try:
            reporter.workdir.mkdir(parents=True)
            result = self._runner(request, reporter)
            if not isinstance(result, dict):
                raise TypeError(f"the runner returned {type(result).__name__}, not a dict")
            result = json.loads(json.dumps(result))
            outcome: tuple[State, dict[str, Any] | None, str | None] = ("succeeded", result, None)
        except Exception as err:
            if not isinstance(err, MobiusError):
                log.exception("job %s failed", job_id)
            outcome = ("failed", None, _paragraph(err))
        finally:
            shutil.rmtree(reporter.workdir, ignore_errors=True)
            self._running.pop(job_id, None)
        with self.store.tx() as tx:
            job = self._owns(tx, job_id)
            if job is None:
                log.warning(
                    "job %s was re-queued while this worker ran it; outcome dropped", job_id
                )
                return
            job.state, job.result, job.error = outcome
            job.finished_at = time.time()
            _save(tx, job, job.state if job.error is None else f"failed: {job.error}")

    def _over_budget(self, job: Job) -> str | None:
        """Why `job` cannot start on this worker for want of memory, or None if it can."""
        if self.max_memory is None or job.estimated_peak is None:
            return None
        peak, budget = human_size(job.estimated_peak), human_size(self.max_memory)
        if job.estimated_peak > self.max_memory:
            return (
                f"waiting for a worker with more memory: its estimated peak, {peak}, is over "
                f"a worker's {budget} budget"
            )
        if job.estimated_peak + sum(self._running.values()) > self.max_memory:
            return (
                f"waiting for memory: its estimated peak, {peak}, and the jobs a worker runs "
                f"exceed that worker's {budget} budget"
            )
        return None

    def _owns(self, tx: Tx, job_id: str) -> Job | None:
        """The job if this worker still runs it (not re-queued by `recover` meanwhile)."""
        job = _load(tx, job_id)
        return job if job and job.state == "running" and job.worker_id == self._worker_id else None


class _JobReporter:
    """The `Reporter` a runner gets: appends events to the job it runs."""

    def __init__(self, queue: JobQueue, job_id: str) -> None:
        self.queue, self.job_id = queue, job_id
        self.workdir = queue.scratch_dir / f"{SCRATCH_PREFIX}{job_id}"
        self.results = queue.results_dir / job_id
        self.current: str | None = None
        self.lines = 0

    def stage(self, name: str) -> None:
        if name not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}, not {name!r}")
        self.current = name
        with self.queue.store.tx() as tx:
            job = self.queue._owns(tx, self.job_id)
            if job is not None:
                job.stage = name
                _save(tx, job)
                tx.append(self.job_id, self._progress(None, None, name))

    def progress(self, variant: str | None, percent: float, message: str = "") -> None:
        event = self._progress(variant, max(0.0, min(100.0, float(percent))), message)
        with self.queue.store.tx() as tx:
            tx.append(self.job_id, event)

    def log(self, line: str) -> None:
        self.lines += 1
        if self.lines > MAX_LOG_LINES + 1:
            return
        if self.lines > MAX_LOG_LINES:
            line = f"(log truncated after {MAX_LOG_LINES} lines)"
        with self.queue.store.tx() as tx:
            tx.append(self.job_id, _log_event(str(line)))

    def _progress(self, variant: str | None, percent: float | None, message: str) -> Record:
        return {
            "kind": "progress",
            "at": time.time(),
            "stage": self.current,
            "variant": variant,
            "percent": percent,
            "message": message,
        }


def _load(tx: Tx, job_id: str, events: bool = False) -> Job | None:
    record = tx.get(job_id)
    if record is None:
        return None
    return Job.from_dict(record, tx.events(job_id) if events else None)


def _save(tx: Tx, job: Job, note: str | None = None) -> None:
    record = job.to_dict()
    del record["progress"], record["log"]
    tx.put(record)
    if note is not None:
        tx.append(job.id, _log_event(note))


def _log_event(line: str) -> Record:
    return {"kind": "log", "at": time.time(), "line": line}


def _check_source(request: ConversionRequest) -> None:
    """Remote front doors name Hub repos only; a folder on the worker is for the CLI."""
    if request.origin == "cli" and Path(request.source).expanduser().is_dir():
        return
    if not is_repo_id(request.source):
        what = "a local folder or a" if request.origin == "cli" else "a"
        raise JobRefused(f"'{request.source}' is not {what} Hub model id (namespace/name)")


def _check_readable_export(request: ConversionRequest) -> None:
    """A private export in the service's own namespace would be readable by the service only:
    the bot's requesters (who name no namespace) get a pull request on the source instead."""
    if request.namespace is None and request.origin in ("hub-mention", "github"):
        raise JobRefused(
            f"'{request.source}' is private, so its export would be a private repo of this "
            "bot's that you could not read: ask for a pull request on the model instead "
            "(`--to pr`), which only the model's members see"
        )


def _paragraph(err: BaseException) -> str:
    """One paragraph for people: the message on one line; the type too when it is not ours."""
    text = " ".join(str(err).split()) or type(err).__name__
    if not isinstance(err, MobiusError):
        text = f"internal error ({type(err).__name__}): {text}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _duration(seconds: float) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}" if n == 1 else f"{n} {unit}s"
    return f"{seconds:g} s"
