"""Webhook load: a burst of Hub mention deliveries (a share of them redelivered) against the bot
on a loopback port, with a fake runner and a recording reply client; nothing leaves the machine.

Reports every delivery's answer, p50/p99 answer ("ack") latency, jobs per distinct comment, and
the time until every ack and result reply was posted. With `--slow N`: N unauthenticated clients
trickle a GitHub delivery's body one byte a second while one real delivery is sent; reports the
memory they hold, when the read deadline cut them off, and the real delivery's answer. See
docs/bot.md.

    python bench/webhooks.py [-n 1000] [--duplicates 0.1] [--concurrency 32] [--json]
    python bench/webhooks.py --slow 100 [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import random
import selectors
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import uvicorn  # noqa: E402

from bot import server as bot_server  # noqa: E402
from bot.app import Settings, create_app  # noqa: E402
from bot.replies import GitHubReplies, HubReplies  # noqa: E402
from pipeline.admission import Checkpoint, ReadAs  # noqa: E402
from pipeline.jobs import ConversionRequest, JobQueue, Limits, Reporter  # noqa: E402

SECRET = "bench-secret"
BOT_ID, HANDLE = "b0t0000000000000000000b0", "mobius-bot"


def hub_payload(
    repo_id: str,
    text: str,
    *,
    comment_id: str,
    author_id: str = "user00000000000000000001",
    num: int = 1,
    repo_type: str = "model",
    private: bool = False,
    status: str = "open",
    hidden: bool = False,
    endpoint: str = "https://huggingface.co",
) -> dict[str, Any]:
    """A discussion-comment webhook the way the Hub sends it (version 3, ids only)."""
    web = f"{endpoint}/{repo_id}"
    return {
        "event": {"action": "create", "scope": "discussion.comment"},
        "repo": {
            "type": repo_type,
            "name": repo_id,
            "id": "6" + "0" * 23,
            "private": private,
            "owner": {"id": "0" * 24},
            "headSha": "0" * 40,
            "url": {"web": web, "api": f"{endpoint}/api/{repo_type}s/{repo_id}"},
        },
        "discussion": {
            "id": "d" + "0" * 23,
            "num": num,
            "isPullRequest": False,
            "status": status,
            "title": "ONNX please",
            "author": {"id": author_id},
            "url": {"web": f"{web}/discussions/{num}", "api": f"{endpoint}/api/discussions/{num}"},
        },
        "comment": {
            "id": comment_id,
            "author": {"id": author_id},
            "content": text,
            "hidden": hidden,
            "url": {"web": f"{web}/discussions/{num}#{comment_id}"},
        },
        "webhook": {"id": "w" + "0" * 23, "version": 3},
    }


class RecordingHub(HubReplies):
    """Hub replies kept in memory; `me()` and authors' names without a Hub."""

    def __init__(self, me: dict[str, Any] | None = None) -> None:
        self._me = me or {"id": BOT_ID, "name": HANDLE}
        self.posts: list[tuple[str, int, str]] = []
        self._lock = threading.Lock()

    def author_name(self, repo_id: str, num: int, comment_id: str, author_id: str) -> str:
        return f"user-{author_id}"

    def post(self, repo_id: str, num: int, text: str) -> None:
        with self._lock:
            self.posts.append((repo_id, num, text))


def fake_runner(request: ConversionRequest, reporter: Reporter) -> dict[str, Any]:
    reporter.stage("build")
    return {"url": f"https://hub.test/{request.source}/discussions/2", "reports": {}}


def fake_probe(request: ConversionRequest, read_as: ReadAs) -> Checkpoint:
    return Checkpoint(0, "0" * 40)


@contextlib.contextmanager
def serve(app: Any) -> Iterator[int]:
    """The bot `app` on a free loopback port, as `mobius bot` serves it, until the block ends."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    timeout = app.state.settings.read_timeout_s
    server = uvicorn.Server(bot_server.config(app, "127.0.0.1", port, read_timeout_s=timeout))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def burst(
    n: int = 1000, duplicates: float = 0.1, concurrency: int = 32, data_dir: Path | None = None
) -> dict[str, Any]:
    """Send `n` deliveries (`duplicates` of them redeliveries of earlier comment ids), each
    comment on its own repo, all at once; wait until every reply is posted."""
    with contextlib.ExitStack() as stack:
        folder = data_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        queue = JobQueue(
            folder / "jobs", runner=fake_runner, limits=Limits(rate=None), probe=fake_probe
        )
        hub = RecordingHub()
        settings = Settings(
            hub_secret=SECRET,
            handle=HANDLE,
            repo_rate=10**6,
            user_rate=10**6,
            reply_rate=10**6,
            poll_s=0.2,
            store_path=folder / "bot.db",
        )
        distinct = n - int(n * duplicates)
        ids = [f"c{i:023d}" for i in range(distinct)]
        rng = random.Random(0)
        order = ids + [rng.choice(ids) for _ in range(n - distinct)]
        rng.shuffle(order)
        app = create_app(queue, hub, None, settings)
        port = stack.enter_context(serve(app))
        stack.enter_context(queue.worker(concurrency=2))
        local = threading.local()

        def deliver(comment_id: str) -> tuple[int, float]:
            if not hasattr(local, "conn"):
                local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            payload = hub_payload(
                f"org/model-{comment_id}", f"@{HANDLE} convert", comment_id=comment_id
            )
            body = json.dumps(payload).encode()
            headers = {"X-Webhook-Secret": SECRET, "Content-Type": "application/json"}
            start = time.perf_counter()
            local.conn.request("POST", "/webhooks/hub", body, headers)
            response = local.conn.getresponse()
            response.read()
            return response.status, time.perf_counter() - start

        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            answers = list(pool.map(deliver, order))
        answered_s = time.perf_counter() - started
        expected = 2 * distinct  # an ack and a result per comment
        deadline = time.monotonic() + 120 + n / 10
        while len(hub.posts) < expected and time.monotonic() < deadline:
            time.sleep(0.1)
        drained_s = time.perf_counter() - started
        jobs = queue.recent(limit=10 * n)
    latencies = sorted(t for _, t in answers)
    per_repo = Counter(job.request.source for job in jobs)
    return {
        "deliveries": n,
        "distinct": distinct,
        "statuses": dict(Counter(s for s, _ in answers)),
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "answered_s": answered_s,
        "jobs": len(jobs),
        "repos_with_one_job": sum(1 for c in per_repo.values() if c == 1),
        "succeeded": sum(1 for job in jobs if job.state == "succeeded"),
        "replies": len(hub.posts),
        "expected_replies": expected,
        "drained_s": drained_s,
    }


SLOW_HEAD = (
    b"POST /webhooks/github HTTP/1.1\r\nHost: bot\r\nContent-Type: application/json\r\n"
    b"X-GitHub-Event: issue_comment\r\nX-Hub-Signature-256: sha256=0\r\n"
    b"Content-Length: 100000\r\n\r\n"
)


def slow_bodies(
    n: int = 100,
    read_timeout_s: float = 10.0,
    interval_s: float = 1.0,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """`n` clients send a GitHub delivery's headers, then its body one byte per `interval_s`,
    until the bot cuts them off; meanwhile one Hub delivery is sent. Memory is this process's
    resident set (the client sockets add nothing to it: their buffers are the kernel's)."""
    with contextlib.ExitStack() as stack:
        folder = data_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        queue = JobQueue(folder / "jobs", runner=fake_runner, probe=fake_probe)
        settings = Settings(
            hub_secret=SECRET,
            github_secret="bench-github-secret",
            handle=HANDLE,
            read_timeout_s=read_timeout_s,
            store_path=folder / "bot.db",
        )
        github = GitHubReplies("ghp_bench", "http://127.0.0.1:9")
        port = stack.enter_context(serve(create_app(queue, RecordingHub(), github, settings)))
        before = _rss_mb()
        selector = stack.enter_context(selectors.DefaultSelector())
        started = time.monotonic()
        for _ in range(n):
            client = socket.create_connection(("127.0.0.1", port))
            client.sendall(SLOW_HEAD)
            client.setblocking(False)
            selector.register(client, selectors.EVENT_READ, bytearray())
        delivery = stack.enter_context(ThreadPoolExecutor(1)).submit(_one_delivery, port)
        peak, answers, last_byte = before, Counter[str](), 0.0
        deadline = started + 3 * read_timeout_s + 10
        while selector.get_map() and time.monotonic() < deadline:
            if time.monotonic() - last_byte >= interval_s:
                last_byte = time.monotonic()
                for key in list(selector.get_map().values()):
                    with contextlib.suppress(OSError):
                        key.fileobj.send(b"x")  # type: ignore[union-attr]
                peak = max(peak, _rss_mb())
            for key, _ in selector.select(timeout=0.05):
                try:
                    data = key.fileobj.recv(4096)  # type: ignore[union-attr]
                except OSError:
                    data = b""
                key.data.extend(data)
                if not data:  # closed by the bot
                    status = bytes(key.data[9:12]).decode() or "closed without an answer"
                    answers[status] += 1
                    selector.unregister(key.fileobj)
                    key.fileobj.close()  # type: ignore[union-attr]
        cut_off_s = time.monotonic() - started
        status, delivery_s = delivery.result()
    return {
        "slow_connections": n,
        "read_timeout_s": read_timeout_s,
        "rss_before_mb": before,
        "rss_peak_mb": peak,
        "kb_per_connection": 1024 * (peak - before) / n,
        "slow_answers": dict(answers),
        "still_open": n - sum(answers.values()),
        "all_cut_off_after_s": cut_off_s,
        "delivery_status": status,
        "delivery_ms": 1000 * delivery_s,
    }


def _one_delivery(port: int) -> tuple[int, float]:
    payload = hub_payload("org/model", f"@{HANDLE} convert", comment_id="c-real")
    headers = {"X-Webhook-Secret": SECRET, "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    start = time.perf_counter()
    conn.request("POST", "/webhooks/hub", json.dumps(payload).encode(), headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, time.perf_counter() - start


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="deliveries (default 1000)")
    parser.add_argument("--duplicates", type=float, default=0.1, help="redelivered share")
    parser.add_argument("--concurrency", type=int, default=32, help="senders at once")
    parser.add_argument("--slow", type=int, metavar="N", help="N slow clients instead")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if args.slow:
        result = slow_bodies(args.slow)
        # past the connection limit uvicorn answers 503 at once: then so may the delivery
        ok = result["still_open"] == 0 and set(result["slow_answers"]) <= {"408", "503"}
        ok = ok and (result["delivery_status"] == 202 or args.slow >= bot_server.LIMIT_CONCURRENCY)
    else:
        result = burst(args.n, args.duplicates, args.concurrency)
        ok = (
            result["statuses"].get(202, 0) == result["distinct"]
            and result["jobs"] == result["repos_with_one_job"] == result["distinct"]
            and result["replies"] == result["expected_replies"]
        )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:22} {value:.1f}" if isinstance(value, float) else f"{key:22} {value}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
