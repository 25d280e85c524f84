"""`pipeline.store.SqliteFile`, under bot.db and jobs.db: writers from many threads take turns
and lose no update; a read is a snapshot that waits for no writer and cannot write."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pipeline.store import SqliteFile, StoreError

SCHEMA = "create table if not exists counter (n integer not null); insert into counter values (0);"


def test_writers_in_many_threads_lose_no_update(tmp_path: Path) -> None:
    file = SqliteFile(tmp_path / "x.db", SCHEMA, timeout_s=30)

    def add(times: int) -> None:
        for _ in range(times):
            with file.tx() as conn:  # read, then write what was read plus one
                (n,) = conn.execute("select n from counter").fetchone()
                conn.execute("update counter set n = ?", (n + 1,))

    threads = [threading.Thread(target=add, args=(50,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with file.read() as conn:
        assert conn.execute("select n from counter").fetchone() == (400,)


def test_a_read_does_not_wait_for_a_writer_and_sees_what_was_committed(tmp_path: Path) -> None:
    file = SqliteFile(tmp_path / "x.db", SCHEMA, timeout_s=30)
    writing, done = threading.Event(), threading.Event()

    def write() -> None:
        with file.tx() as conn:
            conn.execute("update counter set n = 1")
            writing.set()
            done.wait(30)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert writing.wait(30)
        seen: list[tuple[int]] = []

        def read() -> None:
            with file.read() as conn:
                seen.append(conn.execute("select n from counter").fetchone())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(20)  # a read that waited for the writer would still be waiting
        assert seen == [(0,)]
    finally:
        done.set()
        writer.join()
    with file.read() as conn:
        assert conn.execute("select n from counter").fetchone() == (1,)


def test_a_read_cannot_write(tmp_path: Path) -> None:
    file = SqliteFile(tmp_path / "x.db", SCHEMA, timeout_s=30)
    with pytest.raises(StoreError), file.read() as conn:
        conn.execute("update counter set n = 5")
    with file.read() as conn:
        assert conn.execute("select n from counter").fetchone() == (0,)
