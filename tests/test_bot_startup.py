"""`mobius bot` as an operator starts it (a real process): it refuses to start, in one line,
without HF_TOKEN or with a corrupt or read-only bot.db; its log is quiet unless asked; it serves
no API docs."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.store import BotStore
from tests.hub_server import FakeHub
from tests.test_bot import BOT, BOT_TOKEN, SECRET, _app, bench

ROOT = Path(__file__).resolve().parents[1]


def bot_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "MOBIUS_"))}
    env.pop("HF_TOKEN", None)
    return env | {"WEBHOOK_SECRET": SECRET} | extra


def refusal(data_dir: Path, **env: str) -> tuple[int, str]:
    """Start `mobius bot`; it must exit on its own: (exit status, stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "mobius", "bot", "--data-dir", str(data_dir), "--port", "9"],
        cwd=ROOT,
        env=bot_env(**env),
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.returncode, done.stderr


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """`path` cannot be written by this process, root included (chmod does not stop root; an
    immutable file does)."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(path)], check=True)
    else:
        path.chmod(0o444)
    try:
        with pytest.raises(PermissionError):
            path.open("r+b")
        yield
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        else:
            path.chmod(0o644)


def test_the_bot_refuses_to_start_without_a_hub_token(tmp_path: Path) -> None:
    status, err = refusal(tmp_path)
    assert status == 2
    assert err.splitlines() == [
        "mobius bot: set HF_TOKEN: the bot account's Hub token (it reads the repos, comments "
        "and opens pull requests)"
    ]
    assert not (tmp_path / "bot.db").exists()


def test_the_bot_refuses_to_start_with_a_corrupt_bot_db(tmp_path: Path) -> None:
    (tmp_path / "bot.db").write_bytes(b"this is no database " * 100)
    status, err = refusal(tmp_path, HF_TOKEN=BOT_TOKEN)
    assert status == 2
    assert err.splitlines() == [
        f"mobius bot: {tmp_path / 'bot.db'} is corrupt (not an SQLite database): move it aside "
        "to start afresh"
    ]


def test_the_bot_refuses_to_start_with_a_read_only_bot_db(tmp_path: Path) -> None:
    BotStore(tmp_path / "bot.db")
    with read_only(tmp_path / "bot.db"):
        status, err = refusal(tmp_path, HF_TOKEN=BOT_TOKEN)
    assert status == 2
    assert err.splitlines() == [
        f"mobius bot: {tmp_path / 'bot.db'} is read-only: the service needs to write it"
    ]


def test_the_bot_refuses_to_start_when_its_redis_queue_is_down(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]  # nothing listens there once the socket is closed
    status, err = refusal(
        tmp_path, HF_TOKEN=BOT_TOKEN, MOBIUS_REDIS_URL=f"redis://127.0.0.1:{closed}/0"
    )
    assert status == 2
    assert err.splitlines() == [
        f"mobius bot: the job queue (Redis) cannot be used: Error 111 connecting to "
        f"127.0.0.1:{closed}. Connection refused."
    ]


def test_the_bot_serves_no_api_docs(tmp_path: Path) -> None:
    client, _, _ = _app(tmp_path)
    with client:
        for path in ("/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"):
            assert client.get(path).status_code == 404, path
        assert client.get("/health").status_code == 200


def _serve_one_mention(fake_hub: FakeHub, data_dir: Path, *flags: str) -> str:
    """Run `mobius bot` (no worker) until it acknowledged one mention on the loopback Hub;
    returns its output (stdout and stderr)."""
    fake_hub.add_token(BOT_TOKEN, BOT)
    repo_id = f"alice/tiny-{uuid.uuid4().hex[:6]}"
    fake_hub.add_repo(repo_id, {"config.json": b"{}", "model.safetensors": b"\0" * 8})
    num = fake_hub.writes.new_discussion(fake_hub.repos[repo_id], "alice", "ONNX", "", False).num
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "mobius", "bot", "--port", str(port), "--no-worker"]
    proc = subprocess.Popen(
        [*command, "--data-dir", str(data_dir), *flags],
        cwd=ROOT,
        env=bot_env(HF_TOKEN=BOT_TOKEN),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        payload = bench.hub_payload(
            repo_id, f"@{BOT} convert", comment_id="c1", num=num, endpoint=fake_hub.url
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx.post(
                    f"http://127.0.0.1:{port}/webhooks/hub",
                    json=payload,
                    headers={"X-Webhook-Secret": SECRET},
                )
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "the bot did not start"
                time.sleep(0.2)
        assert answer.status_code == 202, answer.text
        discussion = fake_hub.repos[repo_id].discussions[num - 1]
        while len(discussion.comments()) < 2:  # the description, then the bot's ack
            assert time.monotonic() < deadline, "no ack"
            time.sleep(0.1)
    finally:
        proc.terminate()
        log, _ = proc.communicate(timeout=30)
    return log


def test_the_bot_log_is_quiet_unless_asked(fake_hub: FakeHub, tmp_path: Path) -> None:
    quiet = _serve_one_mention(fake_hub, tmp_path / "a")
    assert "Uvicorn running on" in quiet
    assert "HTTP Request:" not in quiet and "POST /webhooks/hub" not in quiet
    verbose = _serve_one_mention(fake_hub, tmp_path / "b", "--log-level", "debug")
    assert "HTTP Request: GET" in verbose and "HTTP Request: POST" in verbose
    assert '"POST /webhooks/hub HTTP/1.1" 202' in verbose
