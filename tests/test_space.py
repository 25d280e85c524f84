"""The Gradio Space end to end: launched on 127.0.0.1 around a real queue and worker, against the
loopback Hub; driven by `gradio_client` and by Debian's Chromium through Playwright."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import gradio_client
import pytest
from playwright import sync_api

from pipeline.request import BadRequest
from space_app import app
from space_app.app import explain_pairs, report_rows, space_request
from space_app.cli import register
from tests.space_server import running_space, seed

BOT, BOT_TOKEN = "mobius-space-bot", "hf_mobiusSpaceBotToken0001"
CAROL, CAROL_TOKEN = "carol", "hf_carolOAuthToken00000001"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="module")
def space(fake_hub, tmp_path_factory) -> Iterator[str]:
    """The app's URL: a JobQueue in a tmp dir with an in-process worker and the bot's token;
    visitors who sign in are carol."""
    fake_hub.add_token(BOT_TOKEN, BOT)
    fake_hub.add_token(CAROL_TOKEN, CAROL)
    data = tmp_path_factory.mktemp("jobs")
    with running_space(data, service_token=BOT_TOKEN, user=CAROL, user_token=CAROL_TOKEN) as served:
        yield served[0]


def test_client_converts_to_a_pull_request(space, fake_hub):
    repo_id = seed(fake_hub)
    client = gradio_client.Client(space, verbose=False)
    progress, log, link, reports, card, archive, error = client.predict(
        repo_id, ["cpu"], ["f32"], "Pull request on the source repo", False, api_name="/convert"
    )
    assert error == "", error
    url = re.search(r"\((http[^)]+/discussions/\d+)\)", link)[1]
    [pr] = fake_hub.repos[repo_id].discussions
    assert url.endswith(f"{repo_id}/discussions/{pr.num}")
    assert reports["data"][0][:2] == ["onnx/cpu-f32", "passed"]
    assert archive is None  # published: no download
    assert Path(card).read_text().strip()  # the card, fetched from the pull request
    assert "succeeded" in progress and log
    assert re.fullmatch(r"\d+\.\d", reports["data"][0][6])  # tok/s, e.g. 250.3
    shown = f"{log}\n{reports}\n{link}"
    assert tempfile.gettempdir() not in shown and "mobius-job-" not in shown
    _, browse = client.predict("any", "cpu", "f32", api_name="/browse")
    assert f"| [pull request]({url}) |" in browse
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
    explained = explain_pairs(["cpu", "cuda"], ["f32", "bf16"])
    assert explained.startswith("⚠️ execution provider 'cpu' does not run bf16")
    client = gradio_client.Client(space, verbose=False)
    *_, error = client.predict(
        "org/model",
        ["cpu"],
        ["bf16"],
        "Pull request on the source repo",
        False,
        api_name="/convert",
    )
    assert "bf16 is available for cuda" in error


def test_int8_is_offered_where_an_ep_runs_it(space, fake_hub):
    assert explain_pairs(["cpu", "dml"], ["f32", "int8"]) == ""
    assert "'cuda' does not run int8" in explain_pairs(["cpu", "cuda"], ["int8"])
    repo_id = seed(fake_hub)
    client = gradio_client.Client(space, verbose=False)
    *_, reports, card, _, error = client.predict(
        repo_id, ["cpu"], ["int8"], "Pull request on the source repo", False, api_name="/convert"
    )
    assert error == "", error
    assert reports["data"][0][:2] == ["onnx/cpu-int8", "passed"]
    assert (
        "int8 variants store the linear layers' weights as 8-bit integers" in Path(card).read_text()
    )


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


def test_variants_are_listed_in_card_order_with_readable_rates():
    rates = {"default-f32": 2503.0, "cpu-f16": 250.29999999, "dml-int4": None, "cpu-f32": 1e-3}
    reports = {f"onnx/{v}": {"tokens_per_second": rate} for v, rate in rates.items()}
    rows = report_rows({"reports": reports})
    order = ["onnx/cpu-f32", "onnx/cpu-f16", "onnx/dml-int4", "onnx/default-f32"]  # not A-Z
    assert [r[0] for r in rows] == order
    assert [r[6] for r in rows] == ["0.0", "250.3", "", "2503.0"]


def test_build_features_and_release_are_advanced_options(space, fake_hub):
    repo_id = seed(fake_hub)
    client = gradio_client.Client(space, verbose=False)
    target = "Pull request on the source repo"
    with pytest.raises(gradio_client.exceptions.AppError, match="'warp-drive'"):
        # the form's choices refuse it (space_request would, by name, were it sent around them)
        client.predict(
            repo_id,
            ["cpu"],
            ["f32"],
            target,
            False,
            ["warp-drive"],
            None,
            False,
            api_name="/convert",
        )
    assert not fake_hub.repos[repo_id].discussions
    features = ["prune-prefill-prefix"]
    *_, reports, card, _, error = client.predict(
        repo_id, ["cpu"], ["f32"], target, False, features, 64, True, api_name="/convert"
    )
    assert error == "", error
    assert reports["data"][0][:2] == ["onnx/cpu-f32", "passed"]
    assert "| Built with | features prune-prefill-prefix; --release |" in Path(card).read_text()
    [pr] = fake_hub.repos[repo_id].discussions
    manifest = json.loads(fake_hub.repos[repo_id].files(pr.ref)["onnx/cpu-f32/mobius.json"])
    assert manifest["features"] == features and manifest["release"] is True


def test_the_sequence_length_is_sent_only_with_static_cache():
    who = app.Visitor("carol")
    request = space_request("org/model", ["cpu"], ["f32"], "none", False, who, [], 512, True)
    assert request.max_seq_len is None and request.release
    with pytest.raises(BadRequest, match="unknown feature 'warp-drive'"):
        space_request("org/model", ["cpu"], ["f32"], "none", False, who, ["warp-drive"])
