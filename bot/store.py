"""The bot's own small SQLite store (`<data dir>/bot.db`): comment ids already handled, the
budgets spent (conversions, replies), and the replies still owed (acks and final results).

Every SQLite failure (a corrupt or read-only file, a full disk) surfaces as a `StoreError` naming
the file and the cause: `mobius bot` refuses to start with it, a delivery gets a 503."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from pipeline.store import SqliteFile, StoreError

SCHEMA_VERSION = 2  # 2: `spent` (tagged, refundable) replaces `hits`
SCHEMA = """
create table if not exists seen (delivery text primary key, at real not null);
drop table if exists hits;
create table if not exists spent (scope text not null, at real not null, tag text not null);
create index if not exists spent_scope on spent (scope, at);
create index if not exists spent_at on spent (at);
create table if not exists replies (
    id integer primary key, target text not null, job_id text, ack text,
    acked integer not null default 0, done integer not null default 0,
    failures integer not null default 0, retry_at real not null default 0,
    created_at real not null
);
create index if not exists replies_open on replies (done);
"""


# What "bot.db or the job queue is unavailable" looks like (not a bug: an outage or a broken
# file, answered 503 and retried; the job queue's SQLite files are huey's and the job store's).
OUTAGES = (StoreError, redis.RedisError, sqlite3.Error)


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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"{self.path} cannot be created: {err.strerror or err}") from err
        self.file = SqliteFile(self.path, f"{SCHEMA}pragma user_version = {SCHEMA_VERSION};", 30)

    def claim(self, delivery: str) -> bool:
        """Record a comment id; False if it was handled before (a redelivery)."""
        with self.file.tx() as db:
            cur = db.execute("insert or ignore into seen values (?, ?)", (delivery, time.time()))
            return cur.rowcount == 1

    def release(self, delivery: str) -> None:
        """Forget a claim whose handling failed, and what it spent, so a redelivery retries."""
        with self.file.tx() as db:
            db.execute("delete from seen where delivery = ?", (delivery,))
            db.execute("delete from spent where tag = ?", (delivery,))

    def spend(self, tag: str, limits: dict[str, int], window_s: float) -> str | None:
        """Spend one unit of each scope's budget (`limits`: scope -> units per `window_s`) for
        `tag`, all or nothing: returns the first scope whose budget is used up (then nothing
        is spent), else None."""
        now = time.time()
        with self.file.tx() as db:
            db.execute("delete from spent where at < ?", (now - window_s,))
            sql = "select count(*) from spent where scope = ?"
            for scope, limit in limits.items():
                if int(db.execute(sql, (scope,)).fetchone()[0]) >= limit:
                    return scope
            rows = [(scope, now, tag) for scope in limits]
            db.executemany("insert into spent values (?, ?, ?)", rows)
            return None

    def refund(self, tag: str, scopes: list[str]) -> None:
        """Give back what `tag` spent on `scopes` (the work it paid for did not happen)."""
        with self.file.tx() as db:
            sql = "delete from spent where tag = ? and scope = ?"
            db.executemany(sql, [(tag, scope) for scope in scopes])

    def owe(self, target: dict[str, Any], job_id: str | None, ack: str | None) -> int:
        with self.file.tx() as db:
            cur = db.execute(
                "insert into replies (target, job_id, ack, created_at) values (?, ?, ?, ?)",
                (json.dumps(target), job_id, ack, time.time()),
            )
            return int(cur.lastrowid or 0)

    def open_replies(self) -> list[Reply]:
        with self.file.read() as db:
            rows = db.execute(
                "select id, target, job_id, ack, acked, failures from replies "
                "where done = 0 and retry_at <= ? order by id",
                (time.time(),),
            ).fetchall()
        return [Reply(r[0], json.loads(r[1]), r[2], r[3], bool(r[4]), r[5]) for r in rows]

    def mark(self, reply_id: int, *, acked: bool = False, done: bool = False) -> None:
        with self.file.tx() as db:
            if acked:
                db.execute("update replies set acked = 1 where id = ?", (reply_id,))
            if done:
                db.execute("update replies set done = 1 where id = ?", (reply_id,))

    def failed(self, reply_id: int, backoff_s: float = 2.0) -> int:
        """Count a failed post; the reply is retried after `backoff_s` * 2 ** (failures - 1)."""
        with self.file.tx() as db:
            row = db.execute("select failures from replies where id = ?", (reply_id,)).fetchone()
            failures = int(row[0]) + 1
            retry_at = time.time() + backoff_s * 2 ** (failures - 1)
            sql = "update replies set failures = ?, retry_at = ? where id = ?"
            db.execute(sql, (failures, retry_at, reply_id))
            return failures
