"""The bot: command grammar, webhook security, redelivery, end to end with the loopback Hub and
GitHub (real huggingface_hub and github3.py clients), and a bounded load burst."""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from huggingface_hub import HfApi

from bot.app import Settings, create_app
from bot.commands import Command, CommandError, check_repo_id, parse_github, parse_mention
from bot.replies import GitHubReplies, HubReplies
from pipeline.jobs import JobQueue, Limits
from tests.github_server import FakeGitHub
from tests.test_jobs import wait_for

_spec = importlib.util.spec_from_file_location(
    "bench_webhooks", Path(__file__).parents[1] / "bench" / "webhooks.py"
)
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

TINY = Path(__file__).parents[1] / "examples" / "tiny-llama"
BOT, BOT_TOKEN = "mobius-bot", "hf_mobiusBotToken000000000001"
USER, USER_TOKEN = "alice", "hf_aliceToken0000000000000001"
SECRET, GH_SECRET, GH_TOKEN = "hub-secret", "gh-secret", "ghp_mobiusbot"


# -- grammar -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("@mobius-bot convert", Command("convert")),
        (
            "Hi! @Mobius-Bot convert --ep cuda,cpu --dtype f16,int4 --to repo --revision v1.0\nthx",
            Command("convert", None, ("cuda", "cpu"), ("f16", "int4"), "repo", "v1.0"),
        ),
        ("@mobius-bot convert --ep=cpu --dtype=int4", Command("convert", dtypes=("int4",))),
        ("@mobius-bot convert --dtype int8,f32", Command("convert", dtypes=("int8", "f32"))),
        (
            "@mobius-bot convert --features text-only,prune-prefill-prefix --release",
            Command("convert", features=("text-only", "prune-prefill-prefix"), release=True),
        ),
        (
            "@mobius-bot convert --release --features=static-cache --max-seq-len 2048",
            Command("convert", features=("static-cache",), max_seq_len=2048, release=True),
        ),
        ("@mobius-bot help", Command("help")),
        ("@mobius-bot  STATUS", Command("status")),
        ("no mention here", None),
        ("@mobius-bot-dev convert", None),
        ("mail me at x@mobius-bot.org", None),
    ],
)
def test_mentions_parse(text: str, want: Command | None) -> None:
    assert parse_mention(text, "mobius-bot") == want


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("@mobius-bot", "did not see a command"),
        ("@mobius-bot build it", "do not know the command"),
        ("@mobius-bot convert --ep", "needs a value"),
        ("@mobius-bot convert --fast", "Unknown option"),
        ("@mobius-bot convert --to space", "`--to` is `pr` or `repo`"),
        ("@mobius-bot convert --dtype 'f16", "could not read"),
        ("@mobius-bot convert --ep a,b,c,d,e", "up to 4"),
        ("@mobius-bot convert --ep CPU;rm", "comma-separated"),
        ("@mobius-bot convert --revision ../main", "not a revision"),
        ("@mobius-bot convert --ep cpu --ep cuda", "given twice"),
        ("@mobius-bot convert --release=yes", "`--release` takes no value"),
        ("@mobius-bot convert --features", "needs a value"),
        ("@mobius-bot convert --features 'a;b'", "comma-separated names, e.g. `--features text"),
        ("@mobius-bot convert --max-seq-len 2k", "`--max-seq-len` takes a whole number"),
        ("@mobius-bot convert --release --release", "given twice"),
        ("@mobius-bot help me", "takes no options"),
    ],
)
def test_malformed_mentions_explain_the_grammar(text: str, error: str) -> None:
    with pytest.raises(CommandError, match=error) as info:
        parse_mention(text, "mobius-bot")
    assert "Usage: `@mobius-bot convert" in str(info.value)


def test_github_commands_parse() -> None:
    text = "Please:\n/convert org/model --ep cpu --dtype f32,int4\n"
    assert parse_github(text, "b") == Command("convert", "org/model", ("cpu",), ("f32", "int4"))
    assert parse_github("/converter org/model", "b") is None
    assert parse_github("see `/convert <namespace/name>`", "b") is None  # our own help text
    with pytest.raises(CommandError, match="Name the Hub model"):
        parse_github("/convert --ep cpu", "b")


@pytest.mark.parametrize(
    "repo_id",
    ["../etc", "org/..", "org/a..b", "org", "a/b/c", "https://hf.co/a/b", "org/-x", "a--b/c", ""],
)
def test_bad_repo_ids_are_refused(repo_id: str) -> None:
    with pytest.raises(CommandError, match="not a Hub model id"):
        check_repo_id(repo_id)


def test_good_repo_ids_pass() -> None:
    for repo_id in ("meta-llama/Llama-3.2-1B", "Qwen/Qwen2.5-0.5B-Instruct", "a/b", "u_1/m.v2"):
        assert check_repo_id(repo_id) == repo_id


# -- webhooks against stub replies ---------------------------------------------------------------
def _app(
    tmp_path: Path, github_url: str = "http://127.0.0.1:9", **settings: Any
) -> tuple[TestClient, JobQueue, Any]:
    queue = JobQueue(
        tmp_path / "jobs",
        runner=bench.fake_runner,
        limits=Limits(rate=None),
        probe=bench.fake_probe,
    )
    hub = bench.RecordingHub()
    base: dict[str, Any] = {
        "hub_secret": SECRET,
        "github_secret": GH_SECRET,
        "handle": BOT,
        "poll_s": 0.05,
        "store_path": tmp_path / "bot.db",
    }
    github = GitHubReplies(GH_TOKEN, github_url)
    return TestClient(create_app(queue, hub, github, Settings(**(base | settings)))), queue, hub


def _hub(client: TestClient, payload: dict[str, Any], secret: str | None = SECRET) -> Any:
    headers = {"X-Webhook-Secret": secret} if secret is not None else {}
    return client.post("/webhooks/hub", json=payload, headers=headers)


def _signed(body: bytes, secret: str = GH_SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _github(client: TestClient, payload: dict[str, Any], signature: str | None = "") -> Any:
    body = json.dumps(payload).encode()
    headers = {"X-GitHub-Event": "issue_comment", "Content-Type": "application/json"}
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature or _signed(body)
    return client.post("/webhooks/github", content=body, headers=headers)


def _gh_payload(repo: str, number: int, body: str, comment_id: int = 1) -> dict[str, Any]:
    return {
        "action": "created",
        "issue": {"number": number},
        "comment": {"id": comment_id, "body": body, "user": {"login": "octo", "type": "User"}},
        "repository": {"full_name": repo},
    }


def _settle(hub: Any, count: int, timeout: float = 10.0) -> list[tuple[str, int, str]]:
    deadline = time.monotonic() + timeout
    while len(hub.posts) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # and nothing more arrives
    return hub.posts


def test_webhook_security(tmp_path: Path) -> None:
    client, queue, _ = _app(tmp_path)
    payload = bench.hub_payload("org/model", f"@{BOT} convert", comment_id="c1")
    with client:
        assert client.get("/health").status_code == 200
        assert _hub(client, payload, secret=None).status_code == 401
        assert _hub(client, payload, secret="wrong").status_code == 403
        huge = payload | {"pad": "x" * (1 << 20)}
        assert _hub(client, huge).status_code == 413
        assert _hub(client, {"event": {}}).status_code == 400
        gh = _gh_payload("octo/models", 1, "/convert org/model")
        assert _github(client, gh, signature=None).status_code == 401
        assert _github(client, gh, signature=_signed(b"other")).status_code == 403
        assert _github(client, gh, signature=_signed(b"x", "wrong-secret")).status_code == 403
        big = gh | {"pad": "x" * (1 << 20)}
        assert _github(client, big, signature=_signed(json.dumps(big).encode())).status_code == 413
        assert queue.recent() == []
        # a delivery that was refused is not remembered: the valid one still runs
        assert _hub(client, payload).status_code == 202
        assert len(queue.recent()) == 1


DEEP = b"[" * 10_000 + b"]" * 10_000
GOOD_GH = _gh_payload("octo/models", 1, "/convert org/model")
GOOD_HUB = bench.hub_payload("org/model", f"@{BOT} convert", comment_id="c1")


def _with(payload: dict[str, Any], path: str, value: Any) -> bytes:
    """`payload` as JSON with the value at dotted `path` replaced by `value` (raw JSON bytes
    when `value` is bytes)."""
    marker = "@@replaced@@"
    data = json.loads(json.dumps(payload))
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    node[last] = marker if isinstance(value, bytes) else value
    text = json.dumps(data).encode()
    return text.replace(json.dumps(marker).encode(), value) if isinstance(value, bytes) else text


MALFORMED_GH = {
    "comment is a list": _with(GOOD_GH, "comment", [1, 2]),
    "issue.number is a dict": _with(GOOD_GH, "issue.number", {"n": 1}),
    "issue.number is a string": _with(GOOD_GH, "issue.number", "1"),
    "user is a string": _with(GOOD_GH, "comment.user", "octo"),
    "login is a number": _with(GOOD_GH, "comment.user.login", 7),
    "body is a list": _with(GOOD_GH, "comment.body", ["/convert org/model"]),
    "comment id is missing": _with(GOOD_GH, "comment.id", None),
    "repository is no owner/name": _with(GOOD_GH, "repository.full_name", "../../x"),
    "10k-deep arrays": DEEP,
    "10k-deep arrays inside": _with(GOOD_GH, "comment.body", DEEP),
    "a list": b"[]",
    "not JSON": b"{",
    "not UTF-8": b'{"action": "\xff\xfe"}',
    "empty": b"",
}
MALFORMED_HUB = {
    "comment is a list": _with(GOOD_HUB, "comment", [1, 2]),
    "discussion.num is a dict": _with(GOOD_HUB, "discussion.num", {"n": 1}),
    "repo is a string": _with(GOOD_HUB, "repo", "org/model"),
    "author is a string": _with(GOOD_HUB, "comment.author", "u1"),
    "10k-deep arrays": DEEP,
    "10k-deep arrays inside": _with(GOOD_HUB, "comment.content", DEEP),
    "a list": b"[]",
    "not JSON": b"{",
    "empty": b"",
}


@pytest.mark.parametrize("body", MALFORMED_GH.values(), ids=MALFORMED_GH.keys())
def test_malformed_github_payloads_get_400(tmp_path: Path, body: bytes) -> None:
    client, queue, _ = _app(tmp_path)
    headers = {"X-GitHub-Event": "issue_comment", "X-Hub-Signature-256": _signed(body)}
    with client:
        answer = client.post("/webhooks/github", content=body, headers=headers)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"].startswith("not an issue_comment payload")
    assert queue.recent() == []


@pytest.mark.parametrize("body", MALFORMED_HUB.values(), ids=MALFORMED_HUB.keys())
def test_malformed_hub_payloads_get_400(tmp_path: Path, body: bytes) -> None:
    client, queue, _ = _app(tmp_path)
    with client:
        answer = client.post("/webhooks/hub", content=body, headers={"X-Webhook-Secret": SECRET})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"].startswith("not a Hub webhook payload")
    assert queue.recent() == []


def test_the_good_payloads_of_the_malformed_tables_are_accepted(tmp_path: Path) -> None:
    client, queue, _ = _app(tmp_path)
    with client:
        assert _github(client, GOOD_GH).status_code == 202
        assert _hub(client, GOOD_HUB).status_code == 202
    assert len(queue.recent()) == 1


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"author_id": bench.BOT_ID}, "own comment"),
        ({"hidden": True}, "hidden"),
        ({"status": "closed"}, "closed"),
        ({"repo_type": "dataset"}, "dataset"),
    ],
)
def test_ignored_comments(tmp_path: Path, change: dict[str, Any], reason: str) -> None:
    client, queue, hub = _app(tmp_path)
    payload = bench.hub_payload("org/model", f"@{BOT} convert", comment_id="c1", **change)
    with client:
        answer = _hub(client, payload)
        assert answer.status_code == 200 and reason in answer.json()["reason"]
        assert _settle(hub, 0) == [] and queue.recent() == []


def test_bad_repo_id_and_malformed_command_get_replies(tmp_path: Path) -> None:
    with FakeGitHub() as github:
        github.add_token(GH_TOKEN, "mobius-bot[bot]")
        github.add_issue("octo/models", 7, "convert")
        client, queue, hub = _app(tmp_path, github.url)
        with client:
            bad = bench.hub_payload("org/model", f"@{BOT} convert --to space", comment_id="c1")
            assert _hub(client, bad).status_code == 202
            dots = _gh_payload("octo/models", 7, "/convert ../../etc/passwd --ep cpu")
            assert _github(client, dots).status_code == 202
            other = _gh_payload("octo/models", 7, "/convert org/a..b", comment_id=2)
            assert _github(client, other).status_code == 202
            posts = _settle(hub, 1)
            _until(lambda: len(github.comments[("octo/models", 7)]) >= 2, 10)
    assert queue.recent() == []
    assert len(posts) == 1 and "`--to` is `pr` or `repo`" in posts[0][2]
    replies = github.comments[("octo/models", 7)]
    assert len(replies) == 2 and all("is not a Hub model id" in text for _, text in replies)


def test_failed_replies_are_retried_with_backoff(tmp_path: Path) -> None:
    client, _, _ = _app(tmp_path)  # its GitHub API is unreachable
    with client:
        assert _github(client, _gh_payload("octo/models", 7, "/convert a/b..c")).status_code == 202
        time.sleep(1.0)
        store = client.app.state.store  # type: ignore[attr-defined]
        assert store.open_replies() == []  # owed, but not due again yet: backing off
    with store.file.tx() as db:
        assert db.execute("select failures, done from replies").fetchall() == [(1, 0)]


def test_redelivery_starts_one_job_and_acks_once(tmp_path: Path) -> None:
    client, queue, hub = _app(tmp_path)
    payload = bench.hub_payload("org/model", f"@{BOT} convert --dtype int4", comment_id="c9")
    with client, queue.worker():
        answers = [_hub(client, payload) for _ in range(3)]
        assert [a.status_code for a in answers] == [202, 200, 200]
        assert [a.json()["status"] for a in answers[1:]] == ["duplicate", "duplicate"]
        posts = _settle(hub, 2)
    [job] = queue.recent()
    assert len(posts) == 2, posts
    assert f"`{job.id}` is queued" in posts[0][2] and "cpu-int4" in posts[0][2]
    assert "finished: https://hub.test/org/model/discussions/2" in posts[1][2]


def test_help_status_and_allow_list(tmp_path: Path) -> None:
    client, _, hub = _app(tmp_path, allow=("org",))
    with client:
        _hub(client, bench.hub_payload("org/model", f"@{BOT} help", comment_id="h"))
        _hub(client, bench.hub_payload("org/model", f"@{BOT} status", comment_id="s"))
        other = _hub(client, bench.hub_payload("else/model", f"@{BOT} convert", comment_id="o"))
        assert other.json()["reason"] == "namespace not on the allow-list"
        posts = [text for _, _, text in _settle(hub, 2)]
    assert "Usage:" in posts[0] and "No conversion jobs for `org/model`" in posts[1]
    assert len(posts) == 2  # the other namespace's comment was ignored, not answered


def _mention(repo_id: str, text: str, comment_id: str, author: str = "u1") -> dict[str, Any]:
    return bench.hub_payload(repo_id, f"@{BOT} {text}", comment_id=comment_id, author_id=author)


def test_help_status_and_refused_commands_spend_no_conversion_budget(tmp_path: Path) -> None:
    client, queue, hub = _app(tmp_path, user_rate=2, repo_rate=2)
    noise = ["help", "status", "build it", "convert --to space", "convert --dtype fp16"]
    with client:
        for i in range(20):  # several people, far more comments than the conversion budgets
            payload = _mention("org/model", noise[i % 5], f"n{i}", author=f"u{i % 3}")
            assert _hub(client, payload).json()["status"] in ("replied", "refused")
        answer = _hub(client, _mention("org/model", "convert", "c1", author="u1"))
        assert answer.json()["status"] == "queued"
        assert len(_settle(hub, 21)) == 21
    assert len(queue.recent()) == 1


def test_a_requesters_conversions_are_limited_and_told_once(tmp_path: Path) -> None:
    client, queue, hub = _app(tmp_path, user_rate=2)
    with client:
        answers = [
            _hub(client, _mention(f"org/model-{i}", "convert", f"c{i}")).json() for i in range(4)
        ]
        other = _hub(client, _mention("org/model-9", "convert", "c9", author="u2")).json()
        posts = [text for _, _, text in _settle(hub, 4)]
    assert [a["status"] for a in answers] == ["queued", "queued", "rate-limited", "rate-limited"]
    assert answers[2]["scope"] == "user:hub:u1" and other["status"] == "queued"
    assert len(queue.recent()) == 3
    told = [text for text in posts if text.startswith("Too many")]
    assert told == ["Too many conversions (your limit: 2 per 60 minutes); try again later."]


def test_asking_again_for_a_queued_conversion_spends_no_budget(tmp_path: Path) -> None:
    client, queue, hub = _app(tmp_path, user_rate=2)
    with client:
        answers = [
            _hub(client, _mention("org/model", text, f"c{i}")).json()
            for i, text in enumerate(["convert", "convert", "convert --dtype int4"])
        ]
        acks = [text for _, _, text in _settle(hub, 3)]
    assert [a["status"] for a in answers] == ["queued"] * 3
    assert answers[0]["job"] == answers[1]["job"] and "is already queued" in acks[1]
    assert len(queue.recent()) == 2


def test_a_repos_conversions_are_limited(tmp_path: Path) -> None:
    client, queue, _ = _app(tmp_path, repo_rate=1)
    with client:
        first = _hub(client, _mention("org/model", "convert", "c1", author="u1")).json()
        second = _hub(client, _mention("org/model", "convert --dtype int4", "c2", "u2")).json()
    assert first["status"] == "queued" and second["scope"] == "repo:org/model"
    assert len(queue.recent()) == 1


def test_a_flood_of_commands_is_answered_up_to_the_reply_limit(tmp_path: Path) -> None:
    client, _, hub = _app(tmp_path, reply_rate=3)
    with client:
        answers = [_hub(client, _mention("org/m", "help", f"h{i}")).json() for i in range(6)]
        posts = [text for _, _, text in _settle(hub, 4)]
    assert [a["status"] for a in answers] == ["replied"] * 3 + ["rate-limited"] * 3
    assert len(posts) == 4 and posts[3].startswith("Too many commands (your limit: 3 per")


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        ("--dtype fp16", "unknown dtype 'fp16'; choose from f32, f16, bf16, int8, int4"),
        ("--ep cuda --dtype int8", "'cuda' does not run int8 (it runs f32, f16, bf16, int4): "),
        ("--ep cpu --dtype bf16", "execution provider 'cpu' does not run bf16 (it runs f32, f16"),
    ],
)
def test_unsupported_variants_are_refused_before_queueing(
    tmp_path: Path, flags: str, problem: str
) -> None:
    client, queue, hub = _app(tmp_path, user_rate=1)
    with client:
        answer = _hub(client, _mention("org/model", f"convert {flags}", "bad"))
        assert answer.status_code == 202 and answer.json()["status"] == "refused"
        assert _hub(client, _mention("org/model", "convert", "good")).json()["status"] == "queued"
        refusal, ack = (text for _, _, text in _settle(hub, 2))
    assert refusal.startswith("I cannot convert that: ") and problem in refusal
    assert "is queued" in ack
    [job] = queue.recent()
    assert job.request.variants == ("cpu-f32",)


def test_build_features_reach_the_request_and_bad_ones_are_refused_by_name(
    tmp_path: Path,
) -> None:
    client, queue, hub = _app(tmp_path)
    with client:
        bad = _hub(client, _mention("org/model", "convert --features text-only,warp-drive", "b"))
        assert bad.json()["status"] == "refused"
        flags = "--features prune-prefill-prefix --release"
        answer = _hub(client, _mention("org/model", f"convert {flags}", "good"))
        assert answer.json()["status"] == "queued"
        refusal, ack = (text for _, _, text in _settle(hub, 2))
    assert refusal.startswith("I cannot convert that: unknown feature 'warp-drive'")
    assert "cpu-f32 with `prune-prefill-prefix`, `--release` -> a pull request" in ack
    [job] = queue.recent()
    assert job.request.features == ("prune-prefill-prefix",) and job.request.release


def test_load_burst_one_job_per_comment(tmp_path: Path) -> None:
    result = bench.burst(n=200, duplicates=0.1, concurrency=16, data_dir=tmp_path)
    print(f"\nwebhook burst: p50 {result['p50_ms']:.0f} ms, p99 {result['p99_ms']:.0f} ms")
    assert result["statuses"] == {202: result["distinct"], 200: 200 - result["distinct"]}
    assert result["jobs"] == result["repos_with_one_job"] == result["distinct"] == 180
    assert result["succeeded"] == 180
    assert result["replies"] == result["expected_replies"] == 360


# -- end to end: loopback Hub and GitHub, the real runner ----------------------------------------
def _bot_comments(fake_hub: Any, repo_id: str, num: int) -> list[str]:
    discussion = fake_hub.repos[repo_id].discussions[num - 1]
    return [
        e["data"]["latest"]["raw"]
        for e in discussion.events
        if e["type"] == "comment" and e["author"]["name"] == BOT
    ]


def _until(check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_mention_and_github_command_end_to_end(fake_hub, tmp_path, monkeypatch) -> None:
    fake_hub.add_token(BOT_TOKEN, BOT)
    fake_hub.add_token(USER_TOKEN, USER)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    repo_id = f"{USER}/tiny-llama-{uuid.uuid4().hex[:6]}"
    fake_hub.add_repo(repo_id, {p.name: p.read_bytes() for p in TINY.iterdir()})
    alice = HfApi(token=USER_TOKEN)
    num = alice.create_discussion(repo_id, title="ONNX please").num
    text = f"@{BOT} convert --ep cpu --dtype f32"
    comment = alice.comment_discussion(repo_id, num, text)
    alice_id = alice.whoami()["id"]
    payload = bench.hub_payload(
        repo_id, text, comment_id=comment.id, author_id=alice_id, num=num, endpoint=fake_hub.url
    )
    queue = JobQueue(tmp_path / "jobs", runner="pipeline.convert:run", limits=Limits(rate=None))
    settings = Settings(
        hub_secret=SECRET, github_secret=GH_SECRET, poll_s=0.2, store_path=tmp_path / "bot.db"
    )
    with FakeGitHub() as github:
        github.add_token(GH_TOKEN, "mobius-bot[bot]")
        github.add_issue("octo/models", 3, "Convert tiny-llama")
        app = create_app(
            queue, HubReplies(BOT_TOKEN), GitHubReplies(GH_TOKEN, github.url), settings
        )
        with TestClient(app) as client, queue.worker():
            answer = _hub(client, payload)
            assert answer.status_code == 202, answer.text
            job_id = answer.json()["job"]
            assert _hub(client, payload).json()["status"] == "duplicate"  # redelivered
            gh = _gh_payload("octo/models", 3, f"/convert {repo_id} --ep cpu --dtype f32")
            assert _github(client, gh).json() == {"status": "queued", "job": job_id}
            job = wait_for(queue, job_id, timeout=120)
            assert job.state == "succeeded", job.error
            _until(lambda: len(_bot_comments(fake_hub, repo_id, num)) >= 2, 20)
            _until(lambda: len(github.comments[("octo/models", 3)]) >= 2, 20)
            # the same command after the job finished: the result at once, no new job
            late = _gh_payload("octo/models", 3, f"/convert {repo_id} --ep cpu --dtype f32", 2)
            assert _github(client, late).json()["job"] == job_id
            _until(lambda: len(github.comments[("octo/models", 3)]) >= 3, 20)
            time.sleep(0.5)
        [pr] = fake_hub.repos[repo_id].pull_requests()
        ack, result = _bot_comments(fake_hub, repo_id, num)
        assert f"`{job_id}` is queued: cpu-f32 -> a pull request" in ack
        assert (
            f"{repo_id}/discussions/{pr.num}" in result and "| `onnx/cpu-f32` | passed |" in result
        )
        replies = github.comments[("octo/models", 3)]
        assert len(replies) == 3 and all(login == "mobius-bot[bot]" for login, _ in replies)
        assert f"`{job_id}` is already queued or running" in replies[0][1]
        assert replies[1][1] == replies[2][1] == result
    assert [j.id for j in queue.recent()] == [job_id]
