"""Trust on the Space's front door: the Hub is asked as the visitor (their OAuth token, or
anonymously), never as the service; private results are shown to their requester only; the
model check refuses absurd configs before downloading them; an unreachable Hub is a sentence;
"a new repo in my namespace" is checked against where the service may write before queueing."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gradio_client
import huggingface_hub.constants
import pytest

from converter.errors import MobiusError
from pipeline.admission import Checkpoint
from pipeline.jobs import ConversionRequest, Job, JobQueue, Limits
from space_app.app import (
    DOWNLOAD,
    Visitor,
    archive_file,
    browse_rows,
    card_file,
    check_model,
    create_app,
    repo_namespace,
    status_markdown,
)
from tests.space_server import running_space, seed, serving, session_headers, signing_in_as

BOT, BOT_TOKEN = "mobius-trust-bot", "hf_mobiusTrustBotToken0001"
DAVE, DAVE_TOKEN = "dave", "hf_daveOAuthToken000000001"
ALICE, ALICE_TOKEN = "alice-t", "hf_aliceTrustToken00000001"
BOB, BOB_TOKEN = "bob-t", "hf_bobTrustToken0000000001"
FRANK, FRANK_TOKEN = "frank", "hf_frankOAuthToken00000001"
PR, NEW_REPO = "Pull request on the source repo", "New repo in my namespace"
SHA = "0" * 40


@pytest.fixture(scope="module")
def space(fake_hub, tmp_path_factory) -> Iterator[tuple[str, JobQueue]]:
    """The app with the bot's token; visitors who sign in are dave."""
    for token, user in ((BOT_TOKEN, BOT), (DAVE_TOKEN, DAVE)):
        fake_hub.add_token(token, user)
    data = tmp_path_factory.mktemp("jobs")
    with running_space(data, service_token=BOT_TOKEN, user=DAVE, user_token=DAVE_TOKEN) as served:
        yield served


def convert(client: gradio_client.Client, repo_id: str, target: str = PR) -> tuple:
    return client.predict(repo_id, ["cpu"], ["f32"], target, False, api_name="/convert")


# -- who may convert what ----------------------------------------------------------------------
def test_anonymous_visitor_is_refused_a_private_repo_and_nothing_is_queued(space, fake_hub):
    url, queue = space
    repo_id = seed(fake_hub, private=True, readers=(DAVE, BOT))
    before = len(queue.recent(1000))
    *_, error = convert(gradio_client.Client(url, verbose=False), repo_id)
    assert error.startswith("⚠️") and f"'{repo_id}' not found" in error and "sign in" in error
    assert len(queue.recent(1000)) == before
    assert fake_hub.repos[repo_id].discussions == []
    assert check_model(repo_id).startswith(f"❌ `{repo_id}` was not found")


def test_anonymous_visitor_gets_no_download_of_a_gated_repo_and_nothing_is_queued(space, fake_hub):
    """The export of a download goes to the visitor: they must pass the gate. (A pull request
    on the gated repo stays behind its gate, so it needs no acceptance.)"""
    url, queue = space
    repo_id = seed(fake_hub, gated=True)
    before = len(queue.recent(1000))
    *_, error = convert(gradio_client.Client(url, verbose=False), repo_id, DOWNLOAD)
    assert error.startswith(f"⚠️ '{repo_id}' is gated: its export goes to you, so sign in")
    assert len(queue.recent(1000)) == before
    assert check_model(repo_id) == (
        f"🔒 `{repo_id}` is gated: sign in and accept its terms on the Hub first"
    )


def test_signed_in_reader_gets_a_private_repo_converted_and_only_they_browse_it(space, fake_hub):
    url, queue = space
    repo_id = seed(fake_hub, private=True, readers=(DAVE, BOT))
    dave = gradio_client.Client(url, verbose=False, headers=session_headers(url))
    _, _, link, reports, card, _, error = convert(dave, repo_id)
    assert error == "", error
    [pr] = fake_hub.repos[repo_id].discussions
    assert link.endswith(f"/{repo_id}/discussions/{pr.num}) (opened)")
    assert reports["data"][0][:2] == ["onnx/cpu-f32", "passed"] and Path(card).is_file()
    assert queue.recent(1)[0].private
    assert check_model(repo_id, DAVE_TOKEN).startswith(f"✅ `{repo_id}`: `llama`")
    _, mine = dave.predict("any", "any", "any", api_name="/browse")
    _, theirs = gradio_client.Client(url, verbose=False).predict(
        "any", "any", "any", api_name="/browse"
    )
    assert repo_id in mine and repo_id not in theirs


def test_another_reader_of_a_private_model_gets_a_conversion_of_their_own(space, fake_hub):
    """The same commit and target asked by someone else who can read the private model is a
    job of their own (its result theirs only), never the first requester's."""
    url, queue = space
    fake_hub.add_token(FRANK_TOKEN, FRANK)
    repo_id = seed(fake_hub, private=True, readers=(DAVE, FRANK, BOT))
    dave = gradio_client.Client(url, verbose=False, headers=session_headers(url))
    *_, first, error = convert(dave, repo_id, DOWNLOAD)
    assert error == "" and Path(first).is_file()
    with signing_in_as(FRANK, FRANK_TOKEN), serving(create_app(queue, login=True)) as other:
        frank = gradio_client.Client(other, verbose=False, headers=session_headers(other))
        *_, second, error = convert(frank, repo_id, DOWNLOAD)
    assert error == "" and Path(second).is_file()
    jobs = [j for j in queue.recent(1000) if j.request.source == repo_id]
    assert sorted(j.request.requester for j in jobs) == sorted([DAVE, FRANK])


# -- private results: browse, status, card, archive --------------------------------------------
def fake_result(request: ConversionRequest, reporter) -> dict:
    """What the real runner returns: a PR url and reports, or for a download the archive."""
    if "broken" in request.source:
        raise MobiusError(f"{request.source} has no weights")
    report = {"ep": "cpu", "dtype": "f32", "status": "passed", "max_abs_diff": 1e-6}
    result = {"reports": {"onnx/cpu-f32": report}}
    if request.publish == "none":
        archive = Path(reporter.results) / "model-onnx.zip"
        archive.parent.mkdir(parents=True, exist_ok=True)
        archive.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
        return result | {"archive": str(archive)}
    return result | {"url": f"http://hub.test/{request.source}/discussions/1"}


def finished_jobs(tmp_path: Path, *requests: ConversionRequest) -> tuple[JobQueue, list[Job]]:
    """`requests` run to the end by `fake_result`; sources under `secret/` are private."""

    def probe(request: ConversionRequest, read_as) -> Checkpoint:
        return Checkpoint(0, SHA, private=request.source.startswith("secret/"))

    queue = JobQueue(tmp_path, runner=fake_result, probe=probe, limits=Limits(rate=None))
    ids = [queue.submit(r) for r in requests]
    with queue.worker():
        deadline = time.monotonic() + 30
        while any(queue.get(i).state not in ("succeeded", "failed") for i in ids):
            assert time.monotonic() < deadline, [queue.get(i).log for i in ids]
            time.sleep(0.05)
    return queue, [queue.get(i) for i in ids]


def job_request(source: str, requester: str, origin: str = "space", **kw) -> ConversionRequest:
    return ConversionRequest(source, ("cpu",), ("f32",), requester=requester, origin=origin, **kw)


def test_private_jobs_are_shown_to_their_requester_only(fake_hub, tmp_path):
    for token, user in ((ALICE_TOKEN, ALICE), (BOB_TOKEN, BOB)):
        fake_hub.add_token(token, user)
    queue, (secret, public, download, broken, github) = finished_jobs(
        tmp_path,
        job_request("secret/model", ALICE),
        job_request("open/model", BOB),
        job_request("secret/download", ALICE, publish="none"),
        job_request("secret/broken", ALICE),
        job_request("secret/other", ALICE, origin="github"),  # a GitHub login, not the Hub's alice
    )
    alice, bob = Visitor(ALICE, ALICE_TOKEN), Visitor(BOB, BOB_TOKEN)
    anonymous = Visitor(ALICE)  # the right name is not enough: the token is

    def browsed(who: Visitor) -> set[str]:
        rows, _ = browse_rows(queue, who)
        return {r["source"] for r in rows if r["url"].startswith("http://hub.test/")}

    assert browsed(alice) == {"secret/model", "open/model"}
    assert browsed(bob) == browsed(anonymous) == {"open/model"}
    assert "secret/broken" in status_markdown(queue, alice)
    assert "secret/broken" not in status_markdown(queue, bob)
    assert card_file(secret, alice) and card_file(public, bob)
    assert card_file(secret, bob) is None and card_file(github, alice) is None
    assert archive_file(download, alice) == (download.result["archive"], "")
    assert archive_file(download, bob) == (None, "")
    assert broken.state == "failed"


def test_hub_listing_is_asked_as_the_visitor_never_as_the_service(fake_hub, tmp_path, monkeypatch):
    fake_hub.add_token(BOT_TOKEN, BOT)
    fake_hub.add_token(ALICE_TOKEN, ALICE)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    card = b"---\ntags: [onnx, mobius]\n---\n# an export\n"
    files = {"README.md": card, "config.json": b'{"model_type": "llama"}'}
    files |= {f"onnx/{v}/mobius.json": b"{}" for v in ("cpu-int4", "cpu-f32")}
    fake_hub.add_repo(f"{BOT}/listed-open-ONNX", files)
    fake_hub.add_repo(f"{BOT}/listed-secret-ONNX", files, private=True, readers=(ALICE,))
    queue = JobQueue(tmp_path)
    start = len(fake_hub.requests)
    rows, note = browse_rows(queue, Visitor("anonymous"))
    assert note == ""
    listed = [(r["source"], r["variant"], r["link"]) for r in rows if "listed-" in r["source"]]
    assert listed == [(f"{BOT}/listed-open-ONNX", v, "repo") for v in ("cpu-f32", "cpu-int4")]
    rows, _ = browse_rows(queue, Visitor(ALICE, ALICE_TOKEN))
    assert f"{BOT}/listed-secret-ONNX" in {r["source"] for r in rows}
    listings = [r for r in fake_hub.requests[start:] if r.path == "/api/models"]
    assert [r.token for r in listings] == [None, ALICE_TOKEN]


# -- the model check -----------------------------------------------------------------------------
def test_model_check_refuses_a_huge_config_without_downloading_it(fake_hub):
    repo_id = seed(fake_hub)
    huge = json.dumps({"model_type": "llama", "pad": "x" * 30 * 2**20}).encode()
    fake_hub.commit(repo_id, {"config.json": huge})
    start = len(fake_hub.requests)
    line = check_model(repo_id)
    assert line.startswith(f"❌ `{repo_id}`: config.json is too large (30.0 MiB;")
    downloads = [r.path for r in fake_hub.requests[start:] if "/resolve/" in r.path]
    assert downloads == []


# -- an unreachable Hub --------------------------------------------------------------------------
@contextmanager
def hub_at(endpoint: str) -> Iterator[None]:
    """As if HF_ENDPOINT were `endpoint` when huggingface_hub was imported."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_ENDPOINT", endpoint)
        mp.setattr(huggingface_hub.constants, "ENDPOINT", endpoint)
        template = f"{endpoint}/{{repo_id}}/resolve/{{revision}}/{{filename}}"
        mp.setattr(huggingface_hub.constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
        yield


def closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_an_unreachable_hub_is_a_sentence(space, tmp_path):
    url, queue = space
    before = len(queue.recent(1000))
    with hub_at(closed_port()):
        line = check_model("org/model")
        rows, note = browse_rows(JobQueue(tmp_path), Visitor("anonymous"))
        *_, error = convert(gradio_client.Client(url, verbose=False), "org/model")
    unreachable = "⚠️ the Hub cannot be reached right now, so `org/model` was not checked"
    assert line == f"{unreachable}; try again later"
    assert rows == [] and note.startswith("the Hub cannot be reached right now, so only this")
    assert error == "⚠️ cannot check 'org/model' on the Hub right now; try again"
    assert len(queue.recent(1000)) == before


# -- a new repo in my namespace ------------------------------------------------------------------
def test_local_run_publishes_a_new_repo_in_the_service_namespace(space, fake_hub):
    url, _ = space
    repo_id = seed(fake_hub)
    *_, link, _, _, _, error = convert(gradio_client.Client(url, verbose=False), repo_id, NEW_REPO)
    assert error == "", error
    export = f"{BOT}/tiny-llama-ONNX"
    assert export in fake_hub.repos and f"/{export})" in link


def test_namespace_the_service_cannot_write_is_refused_before_queueing(space, fake_hub):
    url, queue = space
    repo_id = seed(fake_hub)
    before = len(queue.recent(1000))
    dave = gradio_client.Client(url, verbose=False, headers=session_headers(url))
    *_, error = convert(dave, repo_id, NEW_REPO)
    assert error == (
        f"⚠️ this service cannot create repos in '{DAVE}' (it can in: {BOT}): choose a pull "
        "request or a download"
    )
    assert len(queue.recent(1000)) == before
    assert not any(r.startswith(f"{DAVE}/") for r in fake_hub.repos)


def test_anonymous_visitor_on_a_space_signs_in_for_a_repo(monkeypatch):
    monkeypatch.setenv("SPACE_ID", "org/mobius")
    with pytest.raises(MobiusError, match="sign in with Hugging Face to publish a repo"):
        repo_namespace(Visitor("anonymous"))
