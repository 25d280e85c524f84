"""When bot.db or the job queue is unavailable: a delivery gets a 503 saying why (logged in one
line) and nothing is lost (its redelivery works later), and a result owed during a queue outage
(a real redis-server killed and restarted on its port, its data kept) is posted once the queue is
back."""

from __future__ import annotations

import logging
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from bot.app import Settings, create_app
from pipeline.jobs import JobQueue, Limits
from tests.test_bot import BOT, SECRET, _app, _hub, _settle, bench
from tests.test_bot_startup import read_only

PAYLOAD = bench.hub_payload("org/model", f"@{BOT} convert", comment_id="c1")


def _answered_503(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("delivery answered 503")]


def test_a_read_only_bot_db_answers_503_and_the_redelivery_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    client, queue, hub = _app(tmp_path)
    db = tmp_path / "bot.db"
    with client:
        with read_only(db):
            answer = _hub(client, PAYLOAD)
        assert answer.status_code == 503
        assert answer.json() == {
            "error": f"temporarily unavailable: {db} is read-only: the service needs to write it"
        }
        assert queue.recent() == []
        assert _hub(client, PAYLOAD).status_code == 202  # the sender's retry: nothing was lost
        assert len(_settle(hub, 1)) == 1
    [logged] = _answered_503(caplog)
    assert logged.levelno == logging.ERROR and logged.exc_info is None
    assert "\n" not in logged.getMessage() and len(queue.recent()) == 1


def test_a_corrupt_bot_db_answers_503(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    client, queue, _ = _app(tmp_path)
    with client:
        client.app.state.notifier.stop()  # type: ignore[attr-defined]
        for leftover in tmp_path.glob("bot.db-*"):
            leftover.unlink()
        (tmp_path / "bot.db").write_bytes(b"garbage " * 1000)
        answer = _hub(client, PAYLOAD)
    assert answer.status_code == 503
    assert "bot.db is corrupt (not an SQLite database)" in answer.json()["error"]
    assert len(_answered_503(caplog)) == 1 and queue.recent() == []


class RedisServer:
    """A redis-server on a loopback port this test owns, persisting every write (AOF, fsync
    always) in `folder`, so it can be killed and started again with its data."""

    def __init__(self, folder: Path) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.fail("redis-server is not installed (Debian: apt-get install -y redis-server)")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.command = [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(folder)]
        self.command += ["--save", "", "--appendonly", "yes", "--appendfsync", "always"]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        client, deadline = redis.Redis.from_url(self.url), time.monotonic() + 20
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                assert time.monotonic() < deadline, f"redis-server did not start on {self.port}"
                time.sleep(0.05)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


@pytest.fixture
def redis_server(tmp_path: Path) -> Any:
    server = RedisServer(tmp_path / "redis")
    (tmp_path / "redis").mkdir()
    server.start()
    yield server
    server.kill()


def test_a_result_owed_during_a_queue_outage_is_posted_when_the_queue_is_back(
    tmp_path: Path, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    queue = JobQueue(
        redis_url=redis_server.url,
        runner=bench.fake_runner,
        probe=bench.fake_probe,
        limits=Limits(rate=None),
    )
    hub = bench.RecordingHub()
    # failed posts would be given up within a second: reading the queue must not count as one
    settings = Settings(
        hub_secret=SECRET, handle=BOT, poll_s=0.05, retry_s=0.05, store_path=tmp_path / "bot.db"
    )
    with TestClient(create_app(queue, hub, None, settings)) as client:
        job_id = _hub(client, PAYLOAD).json()["job"]
        assert len(_settle(hub, 1)) == 1  # the ack; the result is owed
        redis_server.kill()
        late = bench.hub_payload("org/other", f"@{BOT} convert", comment_id="c2")
        during = _hub(client, late)
        time.sleep(3)  # an outage many times longer than five failed posts would last
        redis_server.start()
        assert during.status_code == 503 and "temporarily unavailable" in during.json()["error"]
        assert _hub(client, late).status_code == 202  # redelivered once the queue is back
        with queue.worker():
            posts = _settle(hub, 4, timeout=30)
    texts = [text for _, _, text in posts]
    assert f"Conversion job `{job_id}` finished: https://hub.test/org/model" in "".join(texts)
    assert len(texts) == 4 and sum("finished" in text for text in texts) == 2
    assert any("replies wait" in r.getMessage() for r in caplog.records)
    assert not any("given up" in r.getMessage() for r in caplog.records)
