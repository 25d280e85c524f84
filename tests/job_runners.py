"""Fake job runners for tests/test_jobs.py, importable by a separate worker process
(`--runner tests.job_runners:slow`).

`slow` keeps a ledger (SQLite at $MOBIUS_TEST_LEDGER) of the runs it started and the "PRs" it
opened. Like the real publisher it looks for a PR with the same request key before opening one,
so a job re-run after its worker died finds the PR of the first attempt instead of opening a
second.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from typing import Any

from converter.errors import MobiusError
from pipeline.jobs import ConversionRequest, Reporter


def quick(request: ConversionRequest, report: Reporter) -> dict[str, Any]:
    report.stage("resolve")
    report.log(f"resolved {request.source} at {request.revision}")
    report.stage("build")
    for variant in request.variants:
        report.progress(variant, 50, "building")
        report.progress(variant, 100, "built")
    report.stage("publish")
    url = f"https://hub.test/{request.source}/discussions/1"
    return {"url": url, "variants": {v: {"max_abs_diff": 0.0} for v in request.variants}}


def failing(request: ConversionRequest, report: Reporter) -> dict[str, Any]:
    report.stage("build")
    report.log("building")
    raise MobiusError(f"config.json of '{request.source}' has no model_type\n  (a model repo?)")


def crashing(request: ConversionRequest, report: Reporter) -> dict[str, Any]:
    raise KeyError("num_hidden_layers")


def slow(request: ConversionRequest, report: Reporter) -> dict[str, Any]:
    """Build briefly, open a PR once per request key, then take $MOBIUS_TEST_PAUSE seconds."""
    ledger = os.environ["MOBIUS_TEST_LEDGER"]
    with _ledger(ledger) as db:
        db.execute("insert into runs (key, pid) values (?, ?)", (request.key(), os.getpid()))
    report.stage("build")
    for percent in (25, 50, 75, 100):
        time.sleep(0.05)
        report.progress(request.variants[0], percent)
    report.stage("publish")
    with _ledger(ledger) as db:
        found = db.execute("select url from prs where key = ?", (request.key(),)).fetchone()
        if found:
            url = found[0]
            report.log(f"pull request already open: {url}")
        else:
            url = f"https://hub.test/{request.source}/discussions/{os.getpid()}"
            db.execute("insert into prs (key, url) values (?, ?)", (request.key(), url))
            report.log(f"opened pull request {url}")
    time.sleep(float(os.environ.get("MOBIUS_TEST_PAUSE", "0")))  # e.g. replying to the requester
    return {"url": url}


def ledger_rows(path: str, table: str) -> list[tuple[Any, ...]]:
    with _ledger(path) as db:
        return db.execute(f"select * from {table} order by rowid").fetchall()


@contextlib.contextmanager
def _ledger(path: str) -> Any:
    with contextlib.closing(sqlite3.connect(path, timeout=30, isolation_level=None)) as db:
        db.execute("begin immediate")
        db.execute("create table if not exists runs (key text, pid integer)")
        db.execute("create table if not exists prs (key text primary key, url text)")
        yield db
        db.execute("commit")
