"""pipeline.publish and `mobius convert`, end to end: the real huggingface_hub client against
the loopback FakeHub, with packages converted from examples/tiny-llama."""

import argparse
import logging
import re
import traceback
import uuid
from pathlib import Path

import onnxruntime as ort
import pytest
from huggingface_hub import CommitOperationAdd, HfApi, hf_hub_download
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

from converter import MobiusError, build
from pipeline import cli
from pipeline.publish import (
    Published,
    PublishError,
    PublishTarget,
    already_published,
    destination,
    find_existing_pr,
    pr_marker,
    publish,
)
from tests.hub_server import FakeHub, Repo, Request, Response

TINY = Path(__file__).parents[1] / "examples" / "tiny-llama"
BOT, BOT_TOKEN = "mobius-bot", "hf_mobiusBotTokenForTests01"
CARD = "---\nbase_model: tiny\ntags:\n- onnx\n---\n\n# tiny-llama ONNX\n\nA placeholder card.\n"
VARIANTS = (("cpu", "f32"), ("cpu", "int4"))
PACKAGE_FILES = {
    "config.json",
    "model.onnx",
    "model.onnx.data",
    "genai_config.json",
    "mobius.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
}


class Source:
    """A fresh copy of tiny-llama on the FakeHub (the hub and HF cache are shared by the session)
    with packages converted from it."""

    def __init__(self, hub: FakeHub, tmp: Path, variants: tuple[tuple[str, str], ...]) -> None:
        self.hub = hub
        self.files = {p.name: p.read_bytes() for p in TINY.iterdir() if p.is_file()}
        self.repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-llama"
        self.sha = hub.add_repo(self.repo_id, self.files)
        self.packages: dict[str, Path] = {}
        for ep, dtype in variants:
            package = build(self.repo_id, ep=ep, dtype=dtype, progress=False)
            self.packages[f"onnx/{ep}-{dtype}"] = package.save(
                tmp / f"{ep}-{dtype}", progress=False
            )

    def publish(self, target: PublishTarget, token: str = BOT_TOKEN, **kwargs: object) -> Published:
        """Resolve where `target` goes for this source, then publish there."""
        args = dict(
            source_repo_id=self.repo_id,
            source_sha=self.sha,
            package_dirs=self.packages,
            card_text=CARD,
            pr_title="Add ONNX variants (cpu-f32, cpu-int4) converted by mobius",
            pr_description="Two variants, validated.",
            token=token,
        )
        where = destination(self.repo_id, target, token)
        return publish(**(args | kwargs), where=where)  # type: ignore[arg-type]

    @property
    def repo(self) -> Repo:
        return self.hub.repos[self.repo_id]

    def commits_posted(self) -> int:
        return sum(r.method == "POST" and "/commit/" in r.path for r in self.hub.requests)


@pytest.fixture
def source(fake_hub: FakeHub, tmp_path: Path) -> Source:
    fake_hub.add_token(BOT_TOKEN, BOT)
    return Source(fake_hub, tmp_path, VARIANTS)


def new_user(hub: FakeHub, orgs: tuple[str, ...] = ()) -> tuple[str, str]:
    name = f"user-{uuid.uuid4().hex[:8]}"
    token = f"hf_{uuid.uuid4().hex}"
    hub.add_token(token, name, orgs)
    return name, token


def layout(packages: dict[str, Path]) -> set[str]:
    return {f"{folder}/{f.name}" for folder, path in packages.items() for f in path.iterdir()}


# -- pull requests ------------------------------------------------------------------------------
def test_pull_request_end_to_end(source: Source, fake_hub: FakeHub) -> None:
    published = source.publish(PublishTarget("pr"))
    assert published == Published(f"{fake_hub.url}/{source.repo_id}/discussions/1", "pr", False)

    api = HfApi()
    [pr] = list(api.get_repo_discussions(source.repo_id))
    assert (pr.num, pr.author, pr.is_pull_request, pr.status) == (1, BOT, True, "open")
    assert layout(source.packages) == {
        f"onnx/{ep}-{dtype}/{name}" for ep, dtype in VARIANTS for name in PACKAGE_FILES
    }
    files = set(api.list_repo_files(source.repo_id, revision="refs/pr/1"))
    assert files == set(source.files) | layout(source.packages) | {"onnx/README.md"}
    card = hf_hub_download(source.repo_id, "onnx/README.md", revision="refs/pr/1")
    assert Path(card).read_text() == CARD
    readme = hf_hub_download(source.repo_id, "README.md", revision="refs/pr/1")
    assert Path(readme).read_bytes() == source.files["README.md"]
    assert source.repo.refs["main"] == source.sha  # the source branch is untouched
    assert source.repo.commits[source.repo.refs["refs/pr/1"]].parents == [source.sha]

    details = api.get_discussion_details(source.repo_id, 1)
    assert details.target_branch == "refs/heads/main" and details.conflicting_files == []
    assert details.title == "Add ONNX variants (cpu-f32, cpu-int4) converted by mobius"
    assert details.events[0].content.startswith("Two variants, validated.")
    assert pr_marker(source.sha, sorted(source.packages)) in details.events[0].content
    refs = api.list_repo_refs(source.repo_id, include_pull_requests=True)
    assert [r.ref for r in refs.pull_requests or []] == ["refs/pr/1"]

    for ep, dtype in VARIANTS:  # the weights went through LFS; the upload PUT has no token
        data = (source.packages[f"onnx/{ep}-{dtype}"] / "model.onnx.data").read_bytes()
        uploads = [
            r
            for r in fake_hub.requests
            if r.method == "PUT" and source.repo_id in r.path and r.body == data
        ]
        assert len(uploads) == 1 and "authorization" not in uploads[0].headers
        folder = f"onnx/{ep}-{dtype}"
        model = hf_hub_download(source.repo_id, f"{folder}/model.onnx", revision="refs/pr/1")
        hf_hub_download(source.repo_id, f"{folder}/model.onnx.data", revision="refs/pr/1")
        session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        assert "input_ids" in {i.name for i in session.get_inputs()}

    commits = source.commits_posted()
    again = source.publish(PublishTarget("pr"))
    assert again == Published(published.url, "pr", True, "existing")
    assert len(source.repo.discussions) == 1 and source.commits_posted() == commits


def test_pull_request_branches_from_the_converted_revision(source: Source) -> None:
    """main moved after the conversion: the PR still starts at the converted sha."""
    source.hub.commit(source.repo_id, {"later.txt": b"pushed after the conversion"})
    source.publish(PublishTarget("pr"))
    pr_head = source.repo.commits[source.repo.refs["refs/pr/1"]]
    assert pr_head.parents == [source.sha] and "later.txt" not in pr_head.files
    assert HfApi().get_discussion_details(source.repo_id, 1).conflicting_files == []


def test_closed_pull_request_is_not_reopened_unless_forced(source: Source) -> None:
    first = source.publish(PublishTarget("pr"))
    HfApi(token=BOT_TOKEN).change_discussion_status(source.repo_id, 1, "closed")
    again = source.publish(PublishTarget("pr"))
    assert again == Published(first.url, "pr", True, "closed")
    assert "closed" in again.describe() and "force" in again.describe()
    assert [d.status for d in source.repo.discussions] == ["closed"]

    forced = source.publish(PublishTarget("pr", force=True))
    assert forced.url.endswith("/discussions/2") and (forced.reused, forced.outcome) == (
        False,
        "opened",
    )
    assert source.publish(PublishTarget("pr")) == Published(forced.url, "pr", True, "existing")


def test_merged_pull_request_counts_as_handled(source: Source, fake_hub: FakeHub) -> None:
    first = source.publish(PublishTarget("pr"))
    _, token = new_user(fake_hub, orgs=(source.repo_id.split("/")[0],))
    HfApi(token=token).merge_pull_request(source.repo_id, 1)
    assert "onnx/README.md" in source.repo.files("main")
    assert source.publish(PublishTarget("pr")) == Published(first.url, "pr", True, "merged")


def test_pull_request_must_cover_the_requested_variants(fake_hub: FakeHub, tmp_path: Path) -> None:
    fake_hub.add_token(BOT_TOKEN, BOT)
    source = Source(fake_hub, tmp_path, VARIANTS)
    f32 = {"onnx/cpu-f32": source.packages["onnx/cpu-f32"]}
    int4 = {"onnx/cpu-int4": source.packages["onnx/cpu-int4"]}
    assert source.publish(PublishTarget("pr"), package_dirs=f32).url.endswith("/1")
    both = source.publish(PublishTarget("pr"))
    assert both.url.endswith("/2") and not both.reused  # #1 lacks cpu-int4
    assert source.publish(PublishTarget("pr"), package_dirs=int4) == Published(
        both.url, "pr", True, "existing"
    )
    api = HfApi(token=BOT_TOKEN)
    found = find_existing_pr(api, source.repo_id, source.sha, ["onnx/cpu-f32"], BOT)
    assert found is not None and found.num == 2  # the open one that covers, newest first
    assert find_existing_pr(api, source.repo_id, "0" * 40, ["onnx/cpu-f32"], BOT) is None


def test_pull_requests_by_others_are_not_reused(source: Source, fake_hub: FakeHub) -> None:
    """Someone else's PR carrying the same marker does not stop the bot."""
    _, token = new_user(fake_hub)
    HfApi(token=token).create_commit(
        source.repo_id,
        [CommitOperationAdd("onnx/README.md", b"not ours")],
        commit_message="lookalike",
        commit_description=pr_marker(source.sha, sorted(source.packages)),
        create_pr=True,
        parent_commit=source.sha,
    )
    published = source.publish(PublishTarget("pr"))
    assert published.url.endswith("/discussions/2") and published.outcome == "opened"


# -- a repo of its own --------------------------------------------------------------------------
def test_repo_mode_creates_and_then_reuses(source: Source, fake_hub: FakeHub) -> None:
    user, token = new_user(fake_hub)
    target = PublishTarget("repo", private=True)
    published = source.publish(target, token=token)
    repo_id = f"{user}/tiny-llama-ONNX"
    assert published == Published(f"{fake_hub.url}/{repo_id}", "repo", False, "created")
    api = HfApi(token=token)
    assert set(api.list_repo_files(repo_id)) == (
        {".gitattributes", "README.md"} | layout(source.packages)
    )
    assert Path(hf_hub_download(repo_id, "README.md", token=token)).read_text() == CARD
    assert api.model_info(repo_id).private
    with pytest.raises(RepositoryNotFoundError):
        HfApi().model_info(repo_id)  # anonymous callers do not see it

    commits = len(fake_hub.repos[repo_id].commits)
    assert source.publish(target, token=token) == Published(
        published.url, "repo", True, "unchanged"
    )
    assert len(fake_hub.repos[repo_id].commits) == commits
    updated = source.publish(target, token=token, card_text=CARD + "More.\n")
    assert (updated.url, updated.reused, updated.outcome) == (published.url, False, "updated")

    variants = sorted(source.packages)  # before converting again: nothing to do
    where = destination(source.repo_id, target, token)
    found = already_published(source.repo_id, source.sha, variants, where, token)
    assert found == Published(published.url, "repo", True, "unchanged")
    assert already_published(source.repo_id, "f" * 40, variants, where, token) is None
    more = [*variants, "onnx/cuda-f16"]
    assert already_published(source.repo_id, source.sha, more, where, token) is None
    forced = destination(source.repo_id, PublishTarget("repo", private=True, force=True), token)
    assert already_published(source.repo_id, source.sha, variants, forced, token) is None


def test_repo_mode_in_an_org_namespace(source: Source, fake_hub: FakeHub) -> None:
    org = f"org-{uuid.uuid4().hex[:8]}"
    _, member = new_user(fake_hub, orgs=(org,))
    published = source.publish(PublishTarget("repo", namespace=org), token=member)
    assert published.url.endswith(f"/{org}/tiny-llama-ONNX") and published.outcome == "created"
    assert not fake_hub.repos[f"{org}/tiny-llama-ONNX"].private

    _, outsider = new_user(fake_hub)
    other = f"org-{uuid.uuid4().hex[:8]}"
    with pytest.raises(PublishError, match=f"cannot create repos in '{other}'"):
        source.publish(PublishTarget("repo", namespace=other), token=outsider)
    assert f"{other}/tiny-llama-ONNX" not in fake_hub.repos


def test_existing_public_repo_is_not_published_to_as_private(
    source: Source, fake_hub: FakeHub
) -> None:
    _, token = new_user(fake_hub)
    source.publish(PublishTarget("repo"), token=token)
    with pytest.raises(PublishError, match="exists and is public"):
        source.publish(PublishTarget("repo", private=True), token=token, card_text="changed")


# -- failures -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["pr", "repo"])
def test_failed_commit_leaves_nothing_behind(
    mode: str,
    source: Source,
    fake_hub: FakeHub,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="huggingface_hub")  # its own level, default WARNING
    token = BOT_TOKEN if mode == "pr" else new_user(fake_hub)[1]
    repos = set(fake_hub.repos)
    # the server even echoes the token back: it must still not reach the error
    commit = r"/api/models/[^/]+/[^/]+/commit/.*"
    with (
        fake_hub.failing("POST", commit, 500, f"boom ({token})") as failed,
        pytest.raises(PublishError) as err,
    ):
        source.publish(PublishTarget(mode), token=token)
    assert failed and failed[0].token == token
    message = str(err.value)
    assert "HTTP 500" in message and "boom" in message
    text = "".join(traceback.format_exception(err.value))
    captured = capsys.readouterr()
    # httpcore2/httpx2 debug-log the raw response headers, which here echo the token back
    logged = [
        r.getMessage() for r in caplog.records if not r.name.startswith(("httpcore", "httpx"))
    ]
    assert any("huggingface_hub" in r.name for r in caplog.records)  # the client did log
    for output in (text, *logged, captured.out, captured.err):
        assert token not in output
    assert source.repo.discussions == [] and set(source.repo.refs) == {"main"}
    assert set(fake_hub.repos) == repos  # no new repo either


def _created_meanwhile(fake_hub: FakeHub, repo_id: str, files: dict[str, bytes]) -> None:
    """`repo_id` does not exist when checked, but appears (holding `files`) just before our
    create_repo call, which then answers 409."""

    def create_first(request: Request, match: re.Match[str]) -> Response:
        fake_hub.routes[:] = [r for r in fake_hub.routes if r[2] is not create_first]
        fake_hub.add_repo(repo_id, files)
        return fake_hub.writes.create_repo(request, match)

    fake_hub.add_route("POST", r"/api/repos/create", create_first, first=True)


def test_repo_created_by_someone_else_meanwhile_is_kept(source: Source, fake_hub: FakeHub) -> None:
    """Another worker created the (still empty) repo before us: a failed commit must not
    delete it."""
    user, token = new_user(fake_hub)
    repo_id = f"{user}/tiny-llama-ONNX"
    _created_meanwhile(fake_hub, repo_id, {".gitattributes": b"*.onnx filter=lfs\n"})
    with (
        fake_hub.failing("POST", rf"/api/models/{repo_id}/commit/.*"),
        pytest.raises(PublishError, match="HTTP 500"),
    ):
        source.publish(PublishTarget("repo"), token=token)
    assert fake_hub.repos[repo_id].files() == {".gitattributes": b"*.onnx filter=lfs\n"}


def test_repo_taken_meanwhile_by_other_files_is_not_written(
    source: Source, fake_hub: FakeHub
) -> None:
    user, token = new_user(fake_hub)
    repo_id = f"{user}/tiny-llama-ONNX"
    _created_meanwhile(fake_hub, repo_id, {"theirs.txt": b"not ours"})
    with pytest.raises(PublishError, match="holds files that are not a mobius export"):
        source.publish(PublishTarget("repo"), token=token)
    assert fake_hub.repos[repo_id].files() == {"theirs.txt": b"not ours"}


def test_rejected_token(source: Source) -> None:
    bad = "hf_notAValidTokenAtAll123"
    with pytest.raises(PublishError, match="rejected the token") as err:
        source.publish(PublishTarget("pr"), token=bad)
    assert bad not in "".join(traceback.format_exception(err.value))


def test_packages_from_another_revision_are_refused(source: Source) -> None:
    seen = len(source.hub.requests)
    with pytest.raises(PublishError, match="was built from"):
        source.publish(PublishTarget("pr"), source_sha="f" * 40)
    assert len(source.hub.requests) == seen and source.repo.discussions == []


def test_publish_none_does_nothing(source: Source) -> None:
    seen = len(source.hub.requests)
    assert source.publish(PublishTarget("none")) == Published("", "none", False, "skipped")
    assert len(source.hub.requests) == seen
    with pytest.raises(ValueError, match="publish mode"):
        PublishTarget("everywhere")  # type: ignore[arg-type]


# -- the FakeHub answers like the Hub -----------------------------------------------------------
def test_upload_modes_and_permissions(fake_hub: FakeHub) -> None:
    user, token = new_user(fake_hub)
    api = HfApi(token=token)
    repo_id = api.create_repo(f"{user}/uploads").repo_id
    assert api.create_repo(repo_id, exist_ok=True).repo_id == repo_id  # 409 carries the url
    big_text = b"x" * (10 * 1024 * 1024 + 1)
    files = {"notes.txt": b"plain text", "blob.bin2": b"\0\1\2binary", "big.txt": big_text}
    ops = [CommitOperationAdd(path, data) for path, data in files.items()]
    api.create_commit(repo_id, ops, commit_message="files")
    modes = {op.path_in_repo: op._upload_mode for op in ops}
    assert modes == {"notes.txt": "regular", "blob.bin2": "lfs", "big.txt": "lfs"}
    tree = {f.path: f.lfs is not None for f in api.list_repo_tree(repo_id)}
    assert tree == {".gitattributes": False, "notes.txt": False, "blob.bin2": True, "big.txt": True}

    _, other = new_user(fake_hub)
    with pytest.raises(HfHubHTTPError, match="403"):
        HfApi(token=other).create_commit(
            repo_id, [CommitOperationAdd("notes.txt", b"changed")], commit_message="not mine"
        )
    pr = HfApi(token=other).create_commit(
        repo_id, [CommitOperationAdd("x.txt", b"x")], commit_message="mine", create_pr=True
    )
    assert pr.pr_revision == "refs/pr/1" and pr.pr_num == 1
    first = next(iter(fake_hub.repos[repo_id].commits))  # main has moved on since
    with pytest.raises(HfHubHTTPError, match="A commit has happened since") as err:
        api.create_commit(
            repo_id,
            [CommitOperationAdd("notes.txt", b"changed")],
            commit_message="stale",
            parent_commit=first,
        )
    assert err.value.response.status_code == 412


def test_discussion_comments_and_status(fake_hub: FakeHub) -> None:
    user, token = new_user(fake_hub)
    api = HfApi(token=token)
    repo_id = api.create_repo(f"{user}/talk").repo_id
    discussion = api.create_discussion(repo_id, "A question", description="Does it run?")
    api.comment_discussion(repo_id, discussion.num, "It does.")
    api.change_discussion_status(repo_id, discussion.num, "closed", comment="Answered.")
    details = api.get_discussion_details(repo_id, discussion.num)
    assert [e.type for e in details.events] == ["comment", "comment", "comment", "status-change"]
    assert details.status == "closed" and not details.is_pull_request
    assert fake_hub.repos[repo_id].discussions[0].comments() == [
        "Does it run?",
        "It does.",
        "Answered.",
    ]
    open_only = list(api.get_repo_discussions(repo_id, discussion_status="open"))
    assert open_only == []


# -- mobius convert -----------------------------------------------------------------------------
def convert(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="mobius")
    cli.register(parser.add_subparsers(dest="command", required=True))
    return cli.run(parser.parse_args(["convert", *argv, "--reference", "default"]))


def test_convert_local_folder_without_publishing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        convert(
            str(TINY),
            "--ep",
            "cpu",
            "--dtype",
            "f32,int4",
            "--output",
            str(tmp_path),
            "--no-progress",
        )
        == 0
    )
    for ep, dtype in VARIANTS:
        assert (tmp_path / f"onnx/{ep}-{dtype}/model.onnx").is_file()
    card = (tmp_path / "onnx/README.md").read_text()  # the full card, minus the Hub's fields
    assert "| [`onnx/cpu-f32`](cpu-f32/) | cpu | f32 |" in card and "| passed |" in card
    assert "og.Generator(model, params)" in card and 'path = "onnx/cpu-f32"' in card
    assert "pull request" not in card and "base_model" not in card
    out = capsys.readouterr().out
    assert "cpu-f32: passed (max abs diff" in out and "cpu-int4: passed (max abs diff" in out


def test_convert_and_publish_a_pull_request(
    fake_hub: FakeHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_hub.add_token(BOT_TOKEN, BOT)
    files = {p.name: p.read_bytes() for p in TINY.iterdir() if p.is_file()}
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-llama"
    sha = fake_hub.add_repo(repo_id, files)
    monkeypatch.setenv("MOBIUS_TEST_TOKEN", BOT_TOKEN)
    argv = [repo_id, "--dtype", "f32", "--output", str(tmp_path), "--no-progress"]
    assert convert(*argv, "--publish", "pr", "--token-env", "MOBIUS_TEST_TOKEN") == 0
    [pr] = fake_hub.repos[repo_id].discussions
    assert pr.author == BOT and pr.base == sha
    card = (tmp_path / "onnx/README.md").read_text()
    assert fake_hub.repos[repo_id].files(pr.ref)["onnx/README.md"].decode() == card
    assert BOT_TOKEN not in card
    capsys.readouterr()
    assert convert(*argv, "--publish", "pr", "--token-env", "MOBIUS_TEST_TOKEN") == 0
    out = capsys.readouterr().out  # found before converting: nothing was built
    assert "an open pull request already has these variants" in out and "passed" not in out
    assert len(fake_hub.repos[repo_id].discussions) == 1
    monkeypatch.delenv("MOBIUS_TEST_TOKEN")
    with pytest.raises(MobiusError, match=r"needs a Hub token in \$MOBIUS_TEST_TOKEN"):
        convert(*argv, "--publish", "pr", "--token-env", "MOBIUS_TEST_TOKEN")


def test_a_featured_build_is_its_own_pull_request(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain PR does not answer a request for build features or --release (nor the reverse):
    the marker records the build; the card and its command line say what it was built with."""
    fake_hub.add_token(BOT_TOKEN, BOT)
    files = {p.name: p.read_bytes() for p in TINY.iterdir() if p.is_file()}
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-llama"
    fake_hub.add_repo(repo_id, files)
    monkeypatch.setenv("MOBIUS_TEST_TOKEN", BOT_TOKEN)
    argv = [repo_id, "--dtype", "f32", "--no-progress", "--publish", "pr"]
    argv += ["--token-env", "MOBIUS_TEST_TOKEN"]
    assert convert(*argv, "--output", str(tmp_path / "plain")) == 0
    featured = [*argv, "--features", "prune-prefill-prefix", "--release"]
    assert convert(*featured, "--output", str(tmp_path / "featured")) == 0
    plain_pr, featured_pr = fake_hub.repos[repo_id].discussions
    card = (tmp_path / "featured/onnx/README.md").read_text()
    assert "| Built with | features prune-prefill-prefix; --release |" in card
    assert "--features prune-prefill-prefix --release --output OUT" in card
    assert "Built with" not in (tmp_path / "plain/onnx/README.md").read_text()
    found = find_existing_pr(
        HfApi(token=BOT_TOKEN),
        repo_id,
        plain_pr.base,
        ["onnx/cpu-f32"],
        BOT,
        {"features": ["prune-prefill-prefix"], "release": True},
    )
    assert found is not None and found.num == featured_pr.num
    assert convert(*featured, "--output", str(tmp_path / "again")) == 0  # answered, not rebuilt
    assert len(fake_hub.repos[repo_id].discussions) == 2


def test_convert_and_publish_a_private_repo(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, token = new_user(fake_hub)
    files = {p.name: p.read_bytes() for p in TINY.iterdir() if p.is_file()}
    source_id = f"org-{uuid.uuid4().hex[:8]}/tiny-llama"
    fake_hub.add_repo(source_id, files)
    monkeypatch.setenv("HF_TOKEN", token)
    argv = [source_id, "--dtype", "int4", "--output", str(tmp_path), "--no-progress"]
    assert convert(*argv, "--publish", "repo", "--private") == 0
    repo = fake_hub.repos[f"{user}/tiny-llama-ONNX"]
    assert repo.private and set(repo.files()) == {
        ".gitattributes",
        "README.md",
        *(f"onnx/cpu-int4/{name}" for name in PACKAGE_FILES),
    }
    assert repo.files()["README.md"] == (tmp_path / "README.md").read_bytes()
    assert f"{user}/tiny-llama-ONNX" in (tmp_path / "README.md").read_text()
