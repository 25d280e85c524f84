"""Who may convert what through the bot, against the loopback Hub (private repos, members, pull
request refs) and the loopback GitHub API, with the real submission checks: anyone converts public
repos; private ones only from their own discussions or for GitHub users mapped to their namespace;
never an unreviewed revision; jobs name their requesters."""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from huggingface_hub import CommitOperationAdd, HfApi

from bot.app import Settings, create_app, github_users
from bot.replies import GitHubReplies, HubReplies
from pipeline.cli import jobs_command
from pipeline.jobs import JobQueue, Limits
from tests.github_server import FakeGitHub
from tests.hub_server import FakeHub
from tests.test_bot import BOT, BOT_TOKEN, GH_TOKEN, SECRET, _github, _hub, _until, bench
from tests.test_jobs import wait_for

TINY = Path(__file__).parents[1] / "examples" / "tiny-llama"
FILES = {p.name: p.read_bytes() for p in TINY.iterdir() if p.is_file()}
ISSUE = ("octo/models", 5)


class Door:
    """The bot on the loopback Hub and GitHub: its client, queue and what it replied."""

    def __init__(self, client: TestClient, queue: JobQueue, hub: FakeHub, github: FakeGitHub):
        self.client, self.queue, self.hub, self.github = client, queue, hub, github

    def github_replies(self, count: int) -> list[str]:
        _until(lambda: len(self.github.comments[ISSUE]) >= count, 30)
        return [text for _, text in self.github.comments[ISSUE]]

    def hub_replies(self, repo_id: str, num: int, count: int) -> list[str]:
        def bot_comments() -> list[str]:
            events = self.hub.repos[repo_id].discussions[num - 1].events
            return [
                e["data"]["latest"]["raw"]
                for e in events
                if e["type"] == "comment" and e["author"]["name"] == BOT
            ]

        _until(lambda: len(bot_comments()) >= count, 30)
        return bot_comments()


@pytest.fixture
def door_factory(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    fake_hub.add_token(BOT_TOKEN, BOT)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)  # the service's token: read_as=None, the runner
    with FakeGitHub() as github:
        github.add_token(GH_TOKEN, "mobius-bot[bot]")
        github.add_issue(*ISSUE, "convert please")

        def make(runner: Any = bench.fake_runner, **settings: Any) -> Door:
            queue = JobQueue(tmp_path / "jobs", runner=runner, limits=Limits(rate=None))
            base = Settings(hub_secret=SECRET, github_secret="gh-secret", poll_s=0.05)
            config = Settings(**(vars(base) | {"store_path": tmp_path / "bot.db"} | settings))
            app = create_app(
                queue, HubReplies(BOT_TOKEN), GitHubReplies(GH_TOKEN, github.url), config
            )
            return Door(TestClient(app), queue, fake_hub, github)

        yield make


def member(hub: FakeHub, prefix: str) -> tuple[str, str]:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    token = f"hf_{uuid.uuid4().hex}"
    hub.add_token(token, name)
    return name, token


def private_model(hub: FakeHub, owner: str) -> str:
    """`owner/secret-...`, private; the bot was given read access to it."""
    repo_id = f"{owner}/secret-{uuid.uuid4().hex[:6]}"
    hub.add_repo(repo_id, FILES, private=True, readers=(BOT,))
    return repo_id


def gh_comment(text: str, login: str, comment_id: int) -> dict[str, Any]:
    return {
        "action": "created",
        "issue": {"number": ISSUE[1]},
        "comment": {"id": comment_id, "body": text, "user": {"login": login, "type": "User"}},
        "repository": {"full_name": ISSUE[0]},
    }


def mention(hub: FakeHub, token: str, repo_id: str, text: str, *, private: bool) -> Any:
    """Comment on a new discussion of `repo_id` as `token`'s user; the Hub's webhook payload."""
    api = HfApi(token=token)
    num = api.create_discussion(repo_id, title="ONNX please").num
    comment = api.comment_discussion(repo_id, num, text)
    author = api.whoami()["id"]
    return bench.hub_payload(
        repo_id,
        text,
        comment_id=comment.id,
        author_id=author,
        num=num,
        private=private,
        endpoint=hub.url,
    )


def test_github_users_map_logins_to_hub_namespaces() -> None:
    mapping = github_users(" OctoCat=alice, hubot=acme ,octocat=acme-labs,")
    assert mapping == {"octocat": {"alice", "acme-labs"}, "hubot": {"acme"}}
    for bad in ("octocat", "octocat=", "=alice", "octocat=a/b"):
        with pytest.raises(ValueError, match=f"MOBIUS_GITHUB_USERS: '{bad}' is not"):
            github_users(f"hubot=acme,{bad}")


# -- private repos --------------------------------------------------------------------------
def test_github_users_without_a_mapping_to_its_namespace_cannot_convert_a_private_model(
    door_factory: Any, fake_hub: FakeHub
) -> None:
    owner, _ = member(fake_hub, "alice")
    source = private_model(fake_hub, owner)
    door = door_factory(github_users={"octo": frozenset({"elsewhere"})})
    with door.client:
        for number, login in enumerate(("stranger", "octo"), 1):
            answer = _github(door.client, gh_comment(f"/convert {source} --to repo", login, number))
            assert answer.status_code == 202 and answer.json()["status"] == "refused"
        replies = door.github_replies(2)
    for reply in replies:
        assert f"model repo '{source}' not found" in reply
        assert "converted only for someone who can read it" in reply
    assert door.queue.recent() == []
    assert not [r for r in fake_hub.repos if r.startswith(f"{BOT}/") and source.split("/")[1] in r]
    assert fake_hub.repos[source].pull_requests() == []


def test_a_mapped_github_user_converts_a_private_model_as_a_pull_request(
    door_factory: Any, fake_hub: FakeHub
) -> None:
    owner, _ = member(fake_hub, "alice")
    source = private_model(fake_hub, owner)
    door = door_factory(runner="pipeline.convert:run", github_users={"octocat": frozenset({owner})})
    with door.client, door.queue.worker():
        refused = _github(door.client, gh_comment(f"/convert {source} --to repo", "OctoCat", 1))
        assert refused.json()["status"] == "refused"  # a repo of the bot's: nobody could read it
        answer = _github(door.client, gh_comment(f"/convert {source}", "OctoCat", 2))
        assert answer.status_code == 202, answer.text
        job = wait_for(door.queue, answer.json()["job"], timeout=120)
        assert job.state == "succeeded", job.error
        refusal, ack, result = door.github_replies(3)
    assert "its export would be a private repo of this bot's" in refusal and "--to pr" in refusal
    assert job.private and job.request.requester == "gh:OctoCat"
    assert not [r for r in fake_hub.repos if r.startswith(f"{BOT}/")]
    [pr] = fake_hub.repos[source].pull_requests()  # inside the private repo: members only
    assert f"`{job.id}` is queued" in ack and f"{source}/discussions/{pr.num}" in result


def test_the_reply_says_why_an_export_repo_has_another_name(
    door_factory: Any, fake_hub: FakeHub
) -> None:
    owner, token = member(fake_hub, "alice")
    source = f"{owner}/tiny-{uuid.uuid4().hex[:6]}"
    fake_hub.add_repo(source, FILES)
    name = source.split("/")[1]
    # the natural export name already holds another source's export
    taken = {"onnx/cpu-f32/mobius.json": json.dumps({"source": {"repo_id": f"x/{name}"}}).encode()}
    fake_hub.add_repo(f"{BOT}/{name}-ONNX", taken)
    door = door_factory(runner="pipeline.convert:run")
    with door.client, door.queue.worker():
        payload = mention(fake_hub, token, source, f"@{BOT} convert --to repo", private=False)
        answer = _hub(door.client, payload)
        job = wait_for(door.queue, answer.json()["job"], timeout=120)
        assert job.state == "succeeded", job.error
        _, result = door.hub_replies(source, payload["discussion"]["num"], 2)
    export = f"{BOT}/{owner}-{name}-ONNX"
    assert fake_hub.repos[f"{BOT}/{name}-ONNX"].files() == taken
    assert f"{fake_hub.url}/{export}" in result
    assert f"`{BOT}/{name}-ONNX` already holds the export of `x/{name}`" in result
    assert f"so this export is published as `{export}`" in result


def test_a_mention_in_a_private_repos_discussion_converts_that_repo(
    door_factory: Any, fake_hub: FakeHub
) -> None:
    owner, token = member(fake_hub, "alice")
    source = private_model(fake_hub, owner)
    door = door_factory()
    with door.client:
        payload = mention(fake_hub, token, source, f"@{BOT} convert", private=True)
        answer = _hub(door.client, payload)
        assert answer.status_code == 202, answer.text
        [ack] = door.hub_replies(source, payload["discussion"]["num"], 1)
        # the same comment, had the Hub called the repo public, is checked anonymously
        payload = mention(fake_hub, token, source, f"@{BOT} convert --dtype int4", private=False)
        assert _hub(door.client, payload).json()["status"] == "refused"
        [refusal] = door.hub_replies(source, payload["discussion"]["num"], 1)
    job = door.queue.get(answer.json()["job"])
    assert job.private and job.request.source == source and f"`{job.id}` is queued" in ack
    assert f"model repo '{source}' not found" in refusal
    assert [j.id for j in door.queue.recent()] == [job.id]


# -- reviewed revisions only ------------------------------------------------------------------
def test_a_pull_request_revision_is_refused_with_the_reason_and_costs_no_budget(
    door_factory: Any, fake_hub: FakeHub
) -> None:
    owner, token = member(fake_hub, "alice")
    source = f"{owner}/tiny-{uuid.uuid4().hex[:6]}"
    fake_hub.add_repo(source, FILES)
    _, mallory = member(fake_hub, "mallory")
    HfApi(token=mallory).create_commit(
        source, [CommitOperationAdd("notes.txt", b"x")], commit_message="x", create_pr=True
    )
    door = door_factory(user_rate=1, repo_rate=1)
    with door.client:
        payload = mention(
            fake_hub, token, source, f"@{BOT} convert --revision refs/pr/1", private=False
        )
        assert _hub(door.client, payload).json()["status"] == "refused"
        [refusal] = door.hub_replies(source, payload["discussion"]["num"], 1)
        assert door.queue.recent() == []
        payload = mention(fake_hub, token, source, f"@{BOT} convert", private=False)
        assert _hub(door.client, payload).json()["status"] == "queued"  # the budget is whole
    assert "'refs/pr/1' is a pull request of" in refusal and "nobody has reviewed" in refusal


# -- requester names --------------------------------------------------------------------------
def test_jobs_show_the_hub_user_name_and_the_github_login(
    door_factory: Any, fake_hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    owner, token = member(fake_hub, "alice")
    source = f"{owner}/tiny-{uuid.uuid4().hex[:6]}"
    fake_hub.add_repo(source, FILES)
    door = door_factory()
    first = mention(fake_hub, token, source, f"@{BOT} convert", private=False)
    second = mention(fake_hub, token, source, f"@{BOT} convert --dtype int4", private=False)
    lookups = []
    with door.client:
        for payload in (first, second):
            before = len(fake_hub.requests)
            assert _hub(door.client, payload).status_code == 202
            reads = [r for r in fake_hub.requests[before:] if r.method == "GET"]
            lookups.append([r for r in reads if "/discussions/" in r.path])
        comment = gh_comment(f"/convert {source} --dtype f16", "octo", 9)
        assert _github(door.client, comment).status_code == 202
    assert len(lookups[0]) == 1 and lookups[1] == []  # the name is remembered per author id
    requesters = sorted(job.request.requester for job in door.queue.recent())
    assert requesters == sorted([owner, owner, "gh:octo"])
    args = argparse.Namespace(data_dir=tmp_path / "jobs", redis_url=None, job_id=None, limit=10)
    assert jobs_command(args) == 0
    listing = capsys.readouterr().out
    assert listing.count(f"by {owner}") == 2 and "by gh:octo" in listing
    assert first["comment"]["author"]["id"] not in listing
