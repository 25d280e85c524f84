"""Clients that hold connections: the bot under a real uvicorn on a loopback port, as `mobius bot`
serves it (bot/server.py), with a 1 s read deadline. A trickled body is answered 408 at the
deadline and its connection closed, trickled headers and idle connections are closed, and past
the connection limit requests are answered 503 at once; real deliveries are answered meanwhile."""

from __future__ import annotations

import http.client
import json
import socket
import time
from pathlib import Path

from bot.server import LIMIT_CONCURRENCY
from tests.test_bot import BOT, SECRET, _app, bench

DEADLINE_S = 1.0
SLACK_S = 3.0  # two shared cores: time for the server to notice and answer


def _deliver(port: int, comment_id: str) -> int:
    payload = bench.hub_payload("org/model", f"@{BOT} convert", comment_id=comment_id)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/webhooks/hub", json.dumps(payload), {"X-Webhook-Secret": SECRET})
    status = conn.getresponse().status
    conn.close()
    return status


def _closed_after(client: socket.socket, trickle: bytes) -> tuple[float, bytes]:
    """Send `trickle` a byte every 0.2 s until the server closes; (seconds, what it answered)."""
    client.settimeout(0.2)
    start, answer = time.monotonic(), b""
    for byte in trickle:
        assert time.monotonic() - start < DEADLINE_S + SLACK_S, "still open"
        try:
            client.send(bytes([byte]))
            data = client.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            break
        if not data:
            break
        answer += data
    return time.monotonic() - start, answer


def test_slow_bodies_are_cut_off_at_the_deadline_while_a_delivery_is_answered(
    tmp_path: Path,
) -> None:
    result = bench.slow_bodies(n=50, read_timeout_s=DEADLINE_S, interval_s=0.2, data_dir=tmp_path)
    print(
        f"\n50 slow bodies: {result['rss_peak_mb'] - result['rss_before_mb']:.1f} MB held "
        f"({result['kb_per_connection']:.0f} KB each), all cut off after "
        f"{result['all_cut_off_after_s']:.1f} s; delivery {result['delivery_ms']:.0f} ms"
    )
    assert result["slow_answers"] == {"408": 50} and result["still_open"] == 0
    assert DEADLINE_S <= result["all_cut_off_after_s"] < DEADLINE_S + SLACK_S
    assert result["delivery_status"] == 202


def test_a_slow_body_is_answered_408_and_its_connection_closed(tmp_path: Path) -> None:
    client, _, _ = _app(tmp_path, read_timeout_s=DEADLINE_S)
    with bench.serve(client.app) as port, socket.create_connection(("127.0.0.1", port)) as slow:
        slow.sendall(bench.SLOW_HEAD)
        took, answer = _closed_after(slow, b"x" * 100)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ") and b"connection: close" in head.lower()
    assert json.loads(body) == {"error": f"body not received within {DEADLINE_S:g} s"}
    assert DEADLINE_S <= took < DEADLINE_S + SLACK_S


def test_slow_headers_are_cut_off_at_the_deadline(tmp_path: Path) -> None:
    client, _, _ = _app(tmp_path, read_timeout_s=DEADLINE_S)
    with bench.serve(client.app) as port, socket.create_connection(("127.0.0.1", port)) as slow:
        took, answer = _closed_after(slow, b"POST /webhooks/github HTTP/1.1\r\n" + b"X" * 100)
        assert _deliver(port, "c1") == 202
    assert answer == b"" and DEADLINE_S <= took < DEADLINE_S + SLACK_S


def test_connections_past_the_limit_are_answered_503_until_idle_ones_are_closed(
    tmp_path: Path,
) -> None:
    client, _, _ = _app(tmp_path, read_timeout_s=DEADLINE_S)
    with bench.serve(client.app) as port:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(LIMIT_CONCURRENCY)]
        time.sleep(0.3)  # accepted
        assert _deliver(port, "c1") == 503
        time.sleep(DEADLINE_S + SLACK_S)
        assert _deliver(port, "c1") == 202  # the idle connections were closed
        for conn in idle:
            conn.settimeout(1)
            assert conn.recv(10) == b""
            conn.close()
