"""Durable job records for `pipeline.jobs`: a SQLite file (embedded) or Redis (distributed).

A record is the JSON object of one job (`Job.to_dict()` without progress and log); progress and
log events are appended to a separate list per job, so a busy job never rewrites its record to
log a line. Writes happen inside `tx()`, which serializes writers across threads and processes
(`SqliteFile`) or machines (a Redis lock), so a read-modify-write such as "claim this job if it
is still queued" is atomic; `read()` is for reading only and waits for no writer.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from pathlib import Path
from typing import Any, Protocol

import redis

from converter.errors import MobiusError

Record = dict[str, Any]
ACTIVE = ("queued", "running")


class StoreError(MobiusError):
    """The job store cannot be used (corrupt, read-only, full disk...); the message names the
    file and the cause in one line."""


_CAUSES = (  # sqlite3's message -> what it means for the person who runs the service
    ("not a database", "is corrupt (not an SQLite database): move it aside to start afresh"),
    ("malformed", "is corrupt: move it aside to start afresh"),
    ("readonly", "is read-only: the service needs to write it"),
    ("disk is full", "cannot grow: the disk is full"),
    ("unable to open", "cannot be opened: check the folder exists and is writable"),
    ("locked", "is locked by another process for too long"),
)


@contextmanager
def explained(path: Path) -> Iterator[None]:
    """sqlite3 errors inside become one StoreError line naming `path` and the cause."""
    try:
        yield
    except sqlite3.Error as err:
        text = str(err)
        cause = next((why for key, why in _CAUSES if key in text), f"failed: {text}")
        raise StoreError(f"{path} {cause}") from err


class SqliteFile:
    """Short `BEGIN IMMEDIATE` transactions on one SQLite file in WAL mode, from many threads
    and processes; created with `schema` (a script that ends with a write, so a read-only file
    fails here, not at the first transaction). sqlite3 errors become `StoreError`s.

    Built for bursts of tiny transactions (the bot's deliveries: docs/benchmarks.md):
    - this process's threads take turns on a lock before SQLite's. Left to SQLite, a waiting
      writer polls with sleeps of up to 100 ms while newcomers overtake it: some waited seconds
      for a file that was free most of the time. Other processes wait in SQLite's busy handler,
      up to `timeout_s`.
    - `synchronous=NORMAL`: a commit does not wait for the disk, checkpoints do. The file stays
      consistent; a power loss or OS crash (not a crash of this process) can lose the last
      transactions, as Redis's default (fsync once a second) can.
    - one connection stays open while this object lives: when the last connection to a WAL file
      closes, SQLite checkpoints and deletes the WAL, which cost a flush per transaction.
    - yet each transaction opens its own connection, so a file made read-only or replaced is
      noticed at once (a 503 for a delivery), not written through an old descriptor.
    """

    def __init__(self, path: Path, schema: str, timeout_s: float) -> None:
        self.path, self.timeout_s = path, timeout_s
        self._turn = threading.Lock()
        with explained(path):
            self._keep_wal = sqlite3.connect(path, timeout_s)
            try:
                self._keep_wal.execute("pragma journal_mode=wal")
                self._keep_wal.executescript(schema)
            except BaseException:
                self._keep_wal.close()
                raise

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A transaction: committed at the end of the block, rolled back if it raises."""
        with explained(self.path), closing(self._connect()) as conn:
            conn.execute("pragma synchronous=normal")
            with self._turn:  # opening and closing a connection need no turn
                conn.execute("begin immediate")
                try:
                    yield conn
                except BaseException:
                    conn.execute("rollback")
                    raise
                conn.execute("commit")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A snapshot to read (writes fail): in WAL mode no writer waits for it, nor it for one."""
        with explained(self.path), closing(self._connect()) as conn:
            conn.execute("pragma query_only=on")
            conn.execute("begin")  # one snapshot for all its reads, ended by closing
            yield conn

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, self.timeout_s, isolation_level=None)


class Tx(Protocol):
    def get(self, job_id: str) -> Record | None: ...
    def put(self, record: Record) -> None: ...
    def latest(self, key: str) -> Record | None: ...
    def recent(self, limit: int) -> list[Record]: ...
    def active(self) -> list[Record]: ...
    def count_since(self, requester: str, since: float) -> int: ...
    def append(self, job_id: str, event: Record) -> None: ...
    def events(self, job_id: str) -> list[Record]: ...


class Store(Protocol):
    def tx(self) -> AbstractContextManager[Tx]: ...
    def read(self) -> AbstractContextManager[Tx]: ...


SCHEMA = """
create table if not exists jobs (
    id text primary key, key text not null, requester text not null, state text not null,
    created_at real not null, data text not null);
create index if not exists jobs_key on jobs (key, created_at);
create index if not exists jobs_requester on jobs (requester, created_at);
create index if not exists jobs_state on jobs (state);
create index if not exists jobs_created on jobs (created_at);
create table if not exists events (
    seq integer primary key autoincrement, job_id text not null, data text not null);
create index if not exists events_job on events (job_id, seq);
"""


class SqliteStore:
    """Jobs in one SQLite file (WAL mode): safe for many threads and processes on one machine."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = SqliteFile(path, f"{SCHEMA}pragma user_version = 1;", timeout_s=60)

    @contextmanager
    def tx(self) -> Iterator[Tx]:
        with self.file.tx() as conn:
            yield _SqliteTx(conn)

    @contextmanager
    def read(self) -> Iterator[Tx]:
        with self.file.read() as conn:
            yield _SqliteTx(conn)


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _records(self, sql: str, *params: Any) -> list[Record]:
        return [json.loads(row[0]) for row in self.conn.execute(sql, params)]

    def get(self, job_id: str) -> Record | None:
        found = self._records("select data from jobs where id = ?", job_id)
        return found[0] if found else None

    def put(self, record: Record) -> None:
        self.conn.execute(
            "insert or replace into jobs (id, key, requester, state, created_at, data) "
            "values (?, ?, ?, ?, ?, ?)",
            (
                record["id"],
                record["key"],
                record["request"]["requester"],
                record["state"],
                record["created_at"],
                json.dumps(record),
            ),
        )

    def latest(self, key: str) -> Record | None:
        found = self._records(
            "select data from jobs where key = ? order by created_at desc limit 1", key
        )
        return found[0] if found else None

    def recent(self, limit: int) -> list[Record]:
        return self._records("select data from jobs order by created_at desc limit ?", limit)

    def active(self) -> list[Record]:
        return self._records("select data from jobs where state in (?, ?)", *ACTIVE)

    def count_since(self, requester: str, since: float) -> int:
        sql = "select count(*) from jobs where requester = ? and created_at > ?"
        return int(self.conn.execute(sql, (requester, since)).fetchone()[0])

    def append(self, job_id: str, event: Record) -> None:
        sql = "insert into events (job_id, data) values (?, ?)"
        self.conn.execute(sql, (job_id, json.dumps(event)))

    def events(self, job_id: str) -> list[Record]:
        return self._records("select data from events where job_id = ? order by seq", job_id)


class RedisStore:
    """Jobs in Redis under `mobius:`: a JSON string per job, sorted sets as indexes (all jobs,
    per key, per requester), a set of active ids, a list of events per job."""

    def __init__(self, url: str, prefix: str = "mobius:") -> None:
        self.client = redis.Redis.from_url(url, decode_responses=True)
        self.prefix = prefix

    @contextmanager
    def tx(self) -> Iterator[Tx]:
        # A lock's holder dies with its process; `timeout` frees it again (transactions take ms).
        with self.client.lock(f"{self.prefix}lock", timeout=10, blocking_timeout=60):
            yield _RedisTx(self.client, self.prefix)

    @contextmanager
    def read(self) -> Iterator[Tx]:
        # No lock: each command reads atomically, records are replaced whole, events only added.
        yield _RedisTx(self.client, self.prefix)


class _RedisTx:
    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.r = client
        self.p = prefix

    def _records(self, ids: list[str]) -> list[Record]:
        if not ids:
            return []
        return [json.loads(v) for v in self.r.mget([f"{self.p}job:{i}" for i in ids]) if v]

    def get(self, job_id: str) -> Record | None:
        found = self._records([job_id])
        return found[0] if found else None

    def put(self, record: Record) -> None:
        job_id, created = record["id"], record["created_at"]
        pipe = self.r.pipeline()  # MULTI/EXEC: all indexes change together
        pipe.set(f"{self.p}job:{job_id}", json.dumps(record))
        pipe.zadd(f"{self.p}jobs", {job_id: created})
        pipe.zadd(f"{self.p}key:{record['key']}", {job_id: created})
        pipe.zadd(f"{self.p}requester:{record['request']['requester']}", {job_id: created})
        if record["state"] in ACTIVE:
            pipe.sadd(f"{self.p}active", job_id)
        else:
            pipe.srem(f"{self.p}active", job_id)
        pipe.execute()

    def latest(self, key: str) -> Record | None:
        found = self._records(self.r.zrevrange(f"{self.p}key:{key}", 0, 0))
        return found[0] if found else None

    def recent(self, limit: int) -> list[Record]:
        return self._records(self.r.zrevrange(f"{self.p}jobs", 0, limit - 1))

    def active(self) -> list[Record]:
        return self._records(sorted(self.r.smembers(f"{self.p}active")))

    def count_since(self, requester: str, since: float) -> int:
        return int(self.r.zcount(f"{self.p}requester:{requester}", f"({since}", "+inf"))

    def append(self, job_id: str, event: Record) -> None:
        self.r.rpush(f"{self.p}events:{job_id}", json.dumps(event))

    def events(self, job_id: str) -> list[Record]:
        return [json.loads(e) for e in self.r.lrange(f"{self.p}events:{job_id}", 0, -1)]
