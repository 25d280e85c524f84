"""The bot's own small SQLite store (`<data dir>/bot.db`): comment ids already handled, rate
counters, and the replies still owed (acks and final results) per job."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
create table if not exists seen (delivery text primary key, at real not null);
create table if not exists hits (scope text not null, at real not null);
create index if not exists hits_scope on hits (scope, at);
create table if not exists replies (
    id integer primary key, target text not null, job_id text, ack text,
    acked integer not null default 0, done integer not null default 0,
    failures integer not null default 0, retry_at real not null default 0,
    created_at real not null
);
create index if not exists replies_open on replies (done);
"""


@dataclass(frozen=True)
class Reply:
    """Replies owed on one thread: `ack` first (if any), then the job's result (if `job_id`)."""

    id: int
    target: dict[str, Any]
    job_id: str | None
    ack: str | None
    acked: bool
    failures: int


class BotStore:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=30)) as db:
            db.execute("pragma journal_mode=wal")
            db.executescript(SCHEMA)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=30, isolation_level=None)) as db:
            db.execute("begin immediate")
            try:
                yield db
            except BaseException:
                db.execute("rollback")
                raise
            db.execute("commit")

    def claim(self, delivery: str) -> bool:
        """Record a comment id; False if it was handled before (a redelivery)."""
        with self._tx() as db:
            cur = db.execute("insert or ignore into seen values (?, ?)", (delivery, time.time()))
            return cur.rowcount == 1

    def release(self, delivery: str) -> None:
        """Forget a claim whose handling failed before any effect, so a redelivery retries."""
        with self._tx() as db:
            db.execute("delete from seen where delivery = ?", (delivery,))

    def hit(self, scopes: list[str], window_s: float) -> dict[str, int]:
        """Count one command against each scope; returns each scope's count in the window,
        this one included."""
        now = time.time()
        with self._tx() as db:
            db.execute("delete from hits where at < ?", (now - window_s,))
            db.executemany("insert into hits values (?, ?)", [(s, now) for s in scopes])
            sql = "select count(*) from hits where scope = ?"
            return {s: int(db.execute(sql, (s,)).fetchone()[0]) for s in scopes}

    def owe(self, target: dict[str, Any], job_id: str | None, ack: str | None) -> int:
        with self._tx() as db:
            cur = db.execute(
                "insert into replies (target, job_id, ack, created_at) values (?, ?, ?, ?)",
                (json.dumps(target), job_id, ack, time.time()),
            )
            return int(cur.lastrowid or 0)

    def open_replies(self) -> list[Reply]:
        with self._tx() as db:
            rows = db.execute(
                "select id, target, job_id, ack, acked, failures from replies "
                "where done = 0 and retry_at <= ? order by id",
                (time.time(),),
            ).fetchall()
        return [Reply(r[0], json.loads(r[1]), r[2], r[3], bool(r[4]), r[5]) for r in rows]

    def mark(self, reply_id: int, *, acked: bool = False, done: bool = False) -> None:
        with self._tx() as db:
            if acked:
                db.execute("update replies set acked = 1 where id = ?", (reply_id,))
            if done:
                db.execute("update replies set done = 1 where id = ?", (reply_id,))

    def failed(self, reply_id: int, backoff_s: float = 2.0) -> int:
        """Count a failed post; the reply is retried after `backoff_s` * 2 ** (failures - 1)."""
        with self._tx() as db:
            row = db.execute("select failures from replies where id = ?", (reply_id,)).fetchone()
            failures = int(row[0]) + 1
            retry_at = time.time() + backoff_s * 2 ** (failures - 1)
            sql = "update replies set failures = ?, retry_at = ? where id = ?"
            db.execute(sql, (failures, retry_at, reply_id))
            return failures
