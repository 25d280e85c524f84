"""Without HF_TOKEN the Space publishes nothing: it says so, offers "Download (zip)" only, and
serves the archive the real runner wrote (packages and card) from the queue's results folder."""

from __future__ import annotations

import shutil
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import gradio_client
import httpx
import pytest
from gradio_client.exceptions import AppError

from pipeline.jobs import ConversionRequest, Job
from space_app.app import DOWNLOAD, Visitor, archive_file
from tests.space_server import running_space, seed, session_headers

EVE, EVE_TOKEN = "eve", "hf_eveOAuthToken0000000001"
PR = "Pull request on the source repo"


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A queue folder outside the temp dir and the working directory, like a Space's /data:
    gradio serves files from there only because the app allows its results folder."""
    folder = Path.home() / ".cache" / "mobius-test-space" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_without_hf_token_the_space_offers_a_download_of_packages_and_card(
    fake_hub, data_dir, monkeypatch
):
    fake_hub.add_token(EVE_TOKEN, EVE)
    repo_id = seed(fake_hub)
    with running_space(data_dir, service_token=None, user=EVE, user_token=EVE_TOKEN) as served:
        url, queue = served
        config = httpx.get(f"{url}/config").json()
        values = [c.get("props", {}) for c in config["components"]]
        assert any("Publishing is off" in str(v.get("value")) for v in values)
        assert [v["choices"] for v in values if v.get("label") == "Deliver as"] == [
            [[DOWNLOAD, DOWNLOAD]]
        ]
        client = gradio_client.Client(url, verbose=False, headers=session_headers(url))
        with pytest.raises(AppError, match=r"not in the list of choices: \['Download \(zip\)'\]"):
            client.predict(repo_id, ["cpu"], ["f32"], PR, False, api_name="/convert")
        assert queue.recent(10) == []
        _, _, link, reports, _, archive, error = client.predict(
            repo_id, ["cpu"], ["f32"], DOWNLOAD, False, api_name="/convert"
        )
    assert error == "", error
    assert link.startswith("Converted: download") and reports["data"][0][:2] == [
        "onnx/cpu-f32",
        "passed",
    ]
    [job] = queue.recent(10)
    assert Path(job.result["archive"]).is_relative_to(data_dir)
    with zipfile.ZipFile(archive) as zipped:
        names = set(zipped.namelist())
        card = zipped.read("onnx/README.md").decode()
    assert {"onnx/cpu-f32/model.onnx", "onnx/README.md"} <= names
    assert repo_id in card
    assert fake_hub.repos[repo_id].discussions == []


def test_an_archive_that_is_not_on_this_machine_is_explained(tmp_path):
    request = ConversionRequest("org/model", ("cpu",), ("f32",), publish="none", origin="space")
    job = Job("j1", request, "key", state="succeeded", result={"archive": str(tmp_path / "x.zip")})
    archive, problem = archive_file(job, Visitor("anonymous"))
    assert archive is None
    assert problem.startswith("⚠️ the archive is not on this machine: results are kept for a week")
