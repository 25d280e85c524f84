"""The Gradio Space end to end: launched on 127.0.0.1 around a real queue and worker, against the
loopback Hub; driven by `gradio_client` and by Debian's Chromium through Playwright."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # before gradio is imported: no network
os.environ.setdefault("GRADIO_TELEMETRY_ENABLED", "False")

import gradio_client
from playwright import sync_api

from pipeline.jobs import JobQueue, Limits
from space_app import app
from space_app.app import create_app, explain_pairs
from space_app.cli import register
from tests.hub_server import Response

TINY = Path(__file__).parents[1] / "examples" / "tiny-llama"
BOT, BOT_TOKEN = "mobius-space-bot", "hf_mobiusSpaceBotToken0001"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="module")
def space(fake_hub, tmp_path_factory) -> Iterator[str]:
    """The app's URL: a JobQueue in a tmp dir with an in-process worker and the bot's token."""
    fake_hub.add_token(BOT_TOKEN, BOT)
    with pytest.MonkeyPatch.context() as mp, _whoami_with_avatar(fake_hub):
        mp.setenv("HF_TOKEN", BOT_TOKEN)
        mp.setenv("MOBIUS_SPACE_USER", "alice")
        mp.delenv("SPACE_ID", raising=False)
        queue = JobQueue(tmp_path_factory.mktemp("jobs"), limits=Limits(rate=None))
        demo = create_app(queue, login=True)
        with queue.worker():
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            _, url, _ = demo.launch(
                server_name="127.0.0.1",
                server_port=port,
                prevent_thread_lock=True,
                quiet=True,
                share=False,
            )
            try:
                yield url.rstrip("/")
            finally:
                demo.close()


@contextmanager
def _whoami_with_avatar(fake_hub) -> Iterator[None]:
    """gradio's local (mocked) sign-in reads `avatarUrl` from whoami, which FakeHub omits."""

    def whoami(request, match):
        response = fake_hub.writes.whoami(request, match)
        user = json.loads(response.body)
        return Response.json({**user, "avatarUrl": f"{fake_hub.url}/avatars/{user['name']}.png"})

    fake_hub.add_route("GET", r"/api/whoami-v2", whoami, first=True)
    try:
        yield
    finally:
        with fake_hub.lock:
            fake_hub.routes.pop(0)


def seed(fake_hub) -> str:
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-llama"
    fake_hub.add_repo(repo_id, {p.name: p.read_bytes() for p in TINY.iterdir()})
    return repo_id


def test_client_converts_to_a_pull_request(space, fake_hub):
    repo_id = seed(fake_hub)
    client = gradio_client.Client(space, verbose=False)
    progress, log, link, reports, card, error = client.predict(
        repo_id, ["cpu"], ["f32"], "Pull request on the source repo", False, api_name="/convert"
    )
    assert error == "", error
    url = re.search(r"\((http[^)]+/discussions/\d+)\)", link)[1]
    [pr] = fake_hub.repos[repo_id].discussions
    assert url.endswith(f"{repo_id}/discussions/{pr.num}")
    assert reports["data"][0][:2] == ["onnx/cpu-f32", "passed"]
    assert Path(card).read_text().strip()  # the card, fetched from the pull request
    assert "succeeded" in progress and log
    _, browse = client.predict("any", "cpu", "f32", api_name="/browse")
    assert repo_id in browse and url in browse
    _, browse = client.predict("any", "cuda", "any", api_name="/browse")
    assert repo_id not in browse


def test_browser_fills_the_form_and_gets_the_link(space, fake_hub, tmp_path):
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: apt-get install chromium"
    repo_id = seed(fake_hub)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 1600})
            page.goto(space)
            page.locator("#model-id textarea").fill(repo_id)
            page.locator("#model-id textarea").blur()
            sync_api.expect(page.locator("#model-status")).to_contain_text("llama", timeout=15000)
            page.locator("#dtypes").get_by_label("int4").check()
            page.locator("#convert").click()
            link = page.locator("#result-link a").first
            pr_link = re.compile("/discussions/")
            sync_api.expect(link).to_have_attribute("href", pr_link, timeout=60_000)
            href = link.get_attribute("href")
            shot = tmp_path / "space.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    [pr] = fake_hub.repos[repo_id].discussions
    assert href.endswith(f"/discussions/{pr.num}")
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000
    if keep := os.environ.get("MOBIUS_SCREENSHOT_DIR"):
        shutil.copy(shot, keep)


@pytest.mark.parametrize("model_id", ["../etc", "nobody/missing"])
def test_invalid_model_shows_a_readable_error(space, model_id):
    client = gradio_client.Client(space, verbose=False)
    *_, error = client.predict(
        model_id, ["cpu"], ["f32"], "Pull request on the source repo", False, api_name="/convert"
    )
    assert error.startswith("⚠️") and "Traceback" not in error
    assert model_id in error


def test_unsupported_pairs_are_explained_and_refused(space):
    assert explain_pairs(["cpu", "cuda"], ["f32", "bf16"]) == "⚠️ bf16 runs only on cuda: not on cpu"
    client = gradio_client.Client(space, verbose=False)
    *_, error = client.predict(
        "org/model",
        ["cpu"],
        ["bf16"],
        "Pull request on the source repo",
        False,
        api_name="/convert",
    )
    assert "bf16 runs only on cuda" in error


def test_mobius_space_command_parses(monkeypatch, tmp_path):
    served = {}
    monkeypatch.setattr(app, "serve", lambda *a, **kw: served.update(args=a, kw=kw))
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(
        ["space", "--port", "9000", "--data-dir", str(tmp_path), "--no-worker"]
    )
    assert args.handler(args) == 0
    host, port, queue = served["args"]
    assert (host, port, queue.data_dir, served["kw"]) == (
        "127.0.0.1",
        9000,
        tmp_path,
        {"worker": False},
    )
