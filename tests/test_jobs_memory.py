"""Memory budgets: the queue estimates a job's peak at submission (`pipeline.memory`), a worker
(`--max-memory`) leaves a job over its budget queued, saying so, for a worker with more."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from converter.errors import MobiusError
from converter.execution_providers import DTYPES
from mobius.cli import main as mobius_cli
from model_cards import human_size
from pipeline.jobs import JobQueue
from pipeline.memory import BASE_BYTES, PER_CHECKPOINT_BYTE, estimate_peak, parse_size
from tests.test_jobs import (  # noqa: F401 (fixtures)
    ledger,
    probe,
    redis_server,
    redis_url,
    request,
    wait_for,
    where,
)

GB = 10**9


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512MB", 512 * 10**6),
        ("4GB", 4 * GB),
        ("4G", 4 * GB),
        (" 4 gb ", 4 * GB),
        ("1.5GiB", 3 * 2**29),
        ("64KiB", 65536),
        ("2048", 2048),
    ],
)
def test_sizes_are_parsed(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "4XB", "-1GB", "GiB", "4 iB", ""])
def test_a_bad_size_names_itself(text: str) -> None:
    with pytest.raises(MobiusError, match=f"'{text}' is not a memory size"):
        parse_size(text)


def test_a_zero_size_is_refused() -> None:
    with pytest.raises(MobiusError, match="a memory size must be positive, not '0MB'"):
        parse_size("0MB")


def test_the_estimate_grows_with_the_checkpoint_and_the_widest_dtype_counts() -> None:
    assert set(PER_CHECKPOINT_BYTE) == set(DTYPES)
    assert estimate_peak(0, ("f32",)) == BASE_BYTES
    assert estimate_peak(GB, ("int4",)) < estimate_peak(GB, ("f32",))
    assert estimate_peak(GB, ("int4", "f32")) == estimate_peak(GB, ("f32",))
    assert estimate_peak(2 * GB, ("int4",)) > estimate_peak(GB, ("int4",))


def test_the_worker_flag_refuses_a_bad_size(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        mobius_cli(["worker", "--max-memory", "lots"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --max-memory: 'lots' is not a memory size (e.g. 512MB, 4GB, 1.5GiB)" in err


def test_a_job_over_a_workers_budget_stays_queued_for_a_bigger_worker(
    where: dict[str, str],  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    submitter = JobQueue(**where, probe=probe(GB))
    job_id = submitter.submit(request(dtypes=("f32",)))
    estimate = estimate_peak(GB, ("f32",))
    assert submitter.get(job_id).estimated_peak == estimate
    note = (
        f"waiting for a worker with more memory: its estimated peak, {human_size(estimate)}, "
        "is over a worker's 3.7 GiB budget"
    )
    kwargs = {**where, "runner": "tests.job_runners:quick", "lease_s": 0.4}
    small = JobQueue(**kwargs, max_memory=parse_size("4GB"))
    with small.worker():
        job = wait_for(submitter, job_id, waiting=note)
        offered = {job.queued_at}
        deadline = time.monotonic() + 20
        while len(offered) < 3:  # the message comes back after each lease; passed over again
            assert time.monotonic() < deadline, submitter.get(job_id).log
            offered.add(submitter.get(job_id).queued_at)
            time.sleep(0.05)
    job = submitter.get(job_id)
    assert (job.state, job.attempts, job.waiting) == ("queued", 0, note)
    assert [line for line in job.log if line.startswith("not started")] == [f"not started: {note}"]
    assert not any("re-queued" in line for line in job.log)  # offered again quietly

    place = [f"--{k.replace('_', '-')}={v}" for k, v in where.items()]
    assert mobius_cli(["jobs", *place]) == 0
    assert note in capsys.readouterr().out

    big = JobQueue(**kwargs, max_memory=estimate)
    with big.worker():
        job = wait_for(submitter, job_id)
    assert (job.state, job.attempts, job.waiting) == ("succeeded", 1, None)


def test_a_worker_runs_two_jobs_at_once_only_if_both_fit_its_budget(
    tmp_path: Path,
    ledger: str,  # noqa: F811 (the fixture)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MOBIUS_TEST_PAUSE", "0.5")
    queue = JobQueue(
        tmp_path,
        probe=probe(GB),
        runner="tests.job_runners:slow",
        lease_s=0.4,
        max_memory=estimate_peak(GB, ("f32",)) * 3 // 2,  # one job, not two
    )
    ids = [queue.submit(request(f"org/model-{i}", dtypes=("f32",))) for i in range(2)]
    with queue.worker(concurrency=2):
        first, second = sorted((wait_for(queue, i) for i in ids), key=lambda j: j.started_at or 0)
    assert (first.state, second.state) == ("succeeded", "succeeded")
    assert second.started_at >= first.finished_at  # type: ignore[operator]
    waited = [line for line in second.log if line.startswith("not started")]
    assert waited == [
        f"not started: waiting for memory: its estimated peak, {human_size(first.estimated_peak)}"
        f", and the jobs a worker runs exceed that worker's "
        f"{human_size(queue.max_memory)} budget"  # type: ignore[arg-type]
    ]
