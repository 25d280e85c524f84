"""Both front doors take a vision-language repo: the Space's model check says what it becomes,
its conversion opens a pull request with the three graphs, and the bot, tagged in a discussion,
replies with a validation table that covers each component (the image features and
inputs_embeds beside the logits)."""

from __future__ import annotations

import re
import uuid

import gradio_client
from fastapi.testclient import TestClient
from huggingface_hub import HfApi

from bot.app import Settings, create_app
from bot.replies import GitHubReplies, HubReplies
from pipeline.jobs import JobQueue, Limits
from space_app.app import check_model
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm
from tests.space_server import running_space
from tests.test_bot import SECRET, _hub, _until, bench
from tests.test_jobs import wait_for
from tests.tiny_vlm import save_side_files

BOT, BOT_TOKEN = "mobius-vlm-door-bot", "hf_mobiusVlmDoorBotToken01"
ERIN, ERIN_TOKEN = "erin", "hf_erinOAuthToken000000001"
GRAPHS = ("vision.onnx", "embedding.onnx", "model.onnx")
COMPONENTS = re.compile(r"image_features \S+, inputs_embeds \S+")


def _vlm_repo(fake_hub, folder) -> str:
    repo_id = f"{ERIN}/tiny-qwen2.5-vl-{uuid.uuid4().hex[:6]}"
    make_vlm("qwen2_5_vl", CASES["qwen2_5_vl"], folder)
    save_side_files(folder)
    fake_hub.add_repo(repo_id, {p.name: p.read_bytes() for p in folder.iterdir()})
    return repo_id


def test_the_space_checks_and_converts_a_vlm(fake_hub, tmp_path):
    fake_hub.add_token(BOT_TOKEN, BOT)
    fake_hub.add_token(ERIN_TOKEN, ERIN)
    repo_id = _vlm_repo(fake_hub, tmp_path / "hf")
    assert check_model(repo_id).startswith(f"✅ `{repo_id}`: `qwen2_5_vl` (image-text-to-text)")
    with running_space(
        tmp_path / "jobs", service_token=BOT_TOKEN, user=ERIN, user_token=ERIN_TOKEN
    ) as (url, _):
        client = gradio_client.Client(url, verbose=False)
        *_, reports, _, _, error = client.predict(
            repo_id, ["cpu"], ["f32"], "Pull request on the source repo", False, api_name="/convert"
        )
    assert error == "", error
    [row] = reports["data"]
    assert row[:2] == ["onnx/cpu-f32", "passed"]
    assert COMPONENTS.fullmatch(row[-1]), row
    [pr] = fake_hub.repos[repo_id].pull_requests()
    tree = fake_hub.repos[repo_id].files(pr.ref)
    assert all(f"onnx/cpu-f32/{name}" in tree for name in GRAPHS)


def test_the_bot_converts_a_vlm_and_reports_each_component(fake_hub, tmp_path, monkeypatch):
    fake_hub.add_token(BOT_TOKEN, BOT)
    fake_hub.add_token(ERIN_TOKEN, ERIN)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    repo_id = _vlm_repo(fake_hub, tmp_path / "hf")
    erin = HfApi(token=ERIN_TOKEN)
    num = erin.create_discussion(repo_id, title="ONNX please").num
    text = f"@{BOT} convert --ep cpu --dtype f32"
    comment = erin.comment_discussion(repo_id, num, text)
    payload = bench.hub_payload(
        repo_id,
        text,
        comment_id=comment.id,
        author_id=erin.whoami()["id"],
        num=num,
        endpoint=fake_hub.url,
    )
    queue = JobQueue(tmp_path / "jobs", runner="pipeline.convert:run", limits=Limits(rate=None))
    settings = Settings(hub_secret=SECRET, github_secret="unused", store_path=tmp_path / "bot.db")
    app = create_app(
        queue, HubReplies(BOT_TOKEN), GitHubReplies("unused", "http://127.0.0.1:9"), settings
    )
    with TestClient(app) as client, queue.worker():
        answer = _hub(client, payload)
        assert answer.status_code == 202, answer.text
        job = wait_for(queue, answer.json()["job"], timeout=180)
        assert job.state == "succeeded", job.error
        _until(lambda: len(_bot_comments_of(fake_hub, repo_id, num)) >= 2, 20)
    result = _bot_comments_of(fake_hub, repo_id, num)[-1]
    row = next(line for line in result.splitlines() if line.startswith("| `onnx/cpu-f32` |"))
    assert "| passed |" in row and COMPONENTS.search(row), row


def _bot_comments_of(fake_hub, repo_id: str, num: int) -> list[str]:
    discussion = fake_hub.repos[repo_id].discussions[num - 1]
    return [
        e["data"]["latest"]["raw"]
        for e in discussion.events
        if e["type"] == "comment" and e["author"]["name"] == BOT
    ]
