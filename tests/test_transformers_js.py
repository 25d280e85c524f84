"""Transformers.js (tests/js, under Node) runs converted LLMs unchanged: the portable variants
under its file names generate transformers' greedy tokens in its text-generation pipeline, from
a local folder and from the Hub repos `mobius convert` publishes (on the loopback Hub)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import torch
import transformers

import converter.package.package
from converter import build
from converter.package.transformers_js import write_layout
from mobius.cli import main
from pipeline.publish import PublishError, PublishTarget, destination, publish
from tests.checkpoints import TINY_LLAMA
from tests.genai_greedy import genai_greedy
from tests.test_publish import BOT, BOT_TOKEN, CARD, new_user

NEW_TOKENS = 20
CHAT = [{"role": "user", "content": "Tell me about the weather by the river."}]
DTYPES = {"f32": "fp32", "f16": "fp16", "int8": "q8", "int4": "q4"}  # mobius -> Transformers.js


@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> dict[str, Path]:
    """The tiny Llama's portable variants, one package each."""
    out = tmp_path_factory.mktemp("tiny-llama-default")
    return {
        dtype: build(str(TINY_LLAMA), dtype=dtype, progress=False).save(out / dtype, progress=False)
        for dtype in DTYPES
    }


@pytest.fixture(scope="module")
def ids() -> list[int]:
    """The chat prompt's token ids."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(TINY_LLAMA)
    text = tokenizer.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def transformers_greedy(prompt_ids: list[int]) -> list[int]:
    model = transformers.AutoModelForCausalLM.from_pretrained(TINY_LLAMA, dtype=torch.float32)
    ids = torch.tensor([prompt_ids])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS)
    return out[0, len(prompt_ids) :].tolist()


def greedy_call(prompt_ids: list[int]) -> dict:
    """A run.mjs call: the pipeline's model generates greedily after `prompt_ids`."""
    kwargs = {"max_new_tokens": NEW_TOKENS, "do_sample": False}
    return {"generate": {"input_ids": [prompt_ids], **kwargs}}


def new_tokens(result: dict, prompt_ids: list[int]) -> list[int]:
    assert result["dims"] == [1, len(result["data"])]
    assert result["data"][: len(prompt_ids)] == prompt_ids
    return result["data"][len(prompt_ids) :]


def test_pipeline_generates_transformers_greedy_tokens(packages, ids, transformers_js, tmp_path):
    files = write_layout([packages["f32"]], tmp_path / "tiny-llama", root_files=True)
    assert "onnx/model.onnx" in files and "config.json" in files
    assert not any(f.endswith("_data") for f in files)  # small: one file, as Transformers.js wants
    chat_options = {"max_new_tokens": NEW_TOKENS, "do_sample": False}
    request = {"models": str(tmp_path), "model": "tiny-llama", "task": "text-generation"}
    calls = [greedy_call(ids), {"inputs": CHAT, "options": chat_options}]
    generated, [chat] = transformers_js.run({**request, "calls": calls})
    expected = transformers_greedy(ids)
    assert len(expected) > 5
    assert new_tokens(generated, ids) == expected
    tokenizer = transformers.AutoTokenizer.from_pretrained(TINY_LLAMA)
    answer = tokenizer.decode(expected, skip_special_tokens=True)
    assert chat["generated_text"][-1] == {"role": "assistant", "content": answer}


def test_fp16_q8_and_q4_generate_what_onnxruntime_genai_does(
    packages, ids, transformers_js, tmp_path
):
    files = write_layout(packages.values(), tmp_path / "tiny-llama", root_files=True)
    names = {"onnx/model.onnx", "onnx/model_fp16.onnx", "onnx/model_quantized.onnx"}
    assert {*names, "onnx/model_q4.onnx"} <= set(files)
    for dtype in ("f16", "int8", "int4"):
        request = {"models": str(tmp_path), "model": "tiny-llama", "task": "text-generation"}
        options = {"dtype": DTYPES[dtype]}
        [generated] = transformers_js.run(
            {**request, "options": options, "calls": [greedy_call(ids)]}
        )
        assert new_tokens(generated, ids) == genai_greedy(
            packages[dtype], len(ids) + NEW_TOKENS, ids
        ), dtype


# -- from the Hub -------------------------------------------------------------------------------
def add_source(fake_hub) -> tuple[str, str]:
    """A fresh copy of the tiny Llama on the loopback Hub: (repo id, sha)."""
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-llama"
    files = {p.name: p.read_bytes() for p in TINY_LLAMA.iterdir() if p.is_file()}
    return repo_id, fake_hub.add_repo(repo_id, files)


def from_hub(fake_hub, repo_id: str, tmp_path: Path, **options) -> dict:
    """A run.mjs request that downloads `repo_id` from the loopback Hub, as
    `pipeline("text-generation", repo_id, options)` does from huggingface.co."""
    cache = tmp_path / f"js-cache-{uuid.uuid4().hex[:8]}"
    return {
        "remote_host": f"{fake_hub.url}/",
        "cache_dir": str(cache),
        "model": repo_id,
        "task": "text-generation",
        "options": options,
    }


def test_a_pull_request_runs_from_the_hub(fake_hub, ids, transformers_js, tmp_path, monkeypatch):
    """`mobius convert --ep default`: the PR adds the Transformers.js files under onnx/ and
    leaves the source's root files alone; Transformers.js runs them from refs/pr/1."""
    fake_hub.add_token(BOT_TOKEN, BOT)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    repo_id, _ = add_source(fake_hub)
    argv = ["convert", repo_id, "--ep", "default", "--dtype", "f32,int4", "--publish", "pr"]
    assert main([*argv, "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    [pr] = fake_hub.repos[repo_id].pull_requests()
    before, after = fake_hub.repos[repo_id].files(), fake_hub.repos[repo_id].files(pr.ref)
    added = sorted(set(after) - set(before))
    assert {"onnx/model.onnx", "onnx/model_q4.onnx"} <= set(added)
    assert all(name.startswith("onnx/") for name in added)
    assert all(after[name] == data for name, data in before.items())

    request = from_hub(fake_hub, repo_id, tmp_path, revision=pr.ref)
    [f32] = transformers_js.run({**request, "calls": [greedy_call(ids)]})
    assert new_tokens(f32, ids) == transformers_greedy(ids)
    request["options"]["dtype"] = "q4"
    [q4] = transformers_js.run({**request, "calls": [greedy_call(ids)]})
    assert new_tokens(q4, ids) == genai_greedy(
        tmp_path / "out/onnx/default-int4", len(ids) + NEW_TOKENS, ids
    )


def test_an_export_repo_runs_from_the_hub_with_external_weights(
    fake_hub, ids, transformers_js, tmp_path, monkeypatch
):
    """A repo of its own gets config.json and the tokenizer at its root; weights over the
    single-file limit go to `model_q4.onnx_data`, which config.json declares, as it declares
    the dtype to load when there is no f32 file: `pipeline("text-generation", repo)` needs no
    options."""
    repo_id, sha = add_source(fake_hub)
    user, token = new_user(fake_hub)
    package = build(repo_id, dtype="int4", progress=False).save(tmp_path / "int4", progress=False)
    root = tmp_path / "export"
    monkeypatch.setattr(converter.package.package, "INLINE_LIMIT", 0)  # as if over 2 GB
    files = write_layout([package], root, root_files=True)
    assert {"config.json", "tokenizer.json", "onnx/model_q4.onnx_data"} <= set(files)
    declared = json.loads((root / "config.json").read_text())["transformers.js_config"]
    assert declared == {"use_external_data_format": {"model_q4.onnx": 1}, "dtype": "q4"}
    where = destination(repo_id, PublishTarget("repo"), token)
    layout = {name: root / name for name in files}
    args = (repo_id, sha, {"onnx/default-int4": package}, CARD, "title", "description", where)
    publish(*args, token, layout_files=layout)
    export = f"{user}/tiny-llama-ONNX"
    assert set(files) <= set(fake_hub.repos[export].files())

    [q4] = transformers_js.run(
        {**from_hub(fake_hub, export, tmp_path), "calls": [greedy_call(ids)]}
    )
    assert new_tokens(q4, ids) == genai_greedy(package, len(ids) + NEW_TOKENS, ids)


def test_a_pull_request_never_changes_the_sources_root_files(fake_hub, tmp_path):
    """Only Transformers.js' model files go beside the variant folders of a PR; its root
    files (and anything else) are refused before anything is uploaded."""
    repo_id, sha = add_source(fake_hub)
    fake_hub.add_token(BOT_TOKEN, BOT)
    package = build(repo_id, progress=False).save(tmp_path / "f32", progress=False)
    write_layout([package], tmp_path / "js", root_files=True)
    where = destination(repo_id, PublishTarget("pr"), BOT_TOKEN)
    args = (repo_id, sha, {"onnx/default-f32": package}, CARD, "title", "description", where)
    for name in ("config.json", "onnx/notes.txt"):
        layout = {name: tmp_path / "js" / "config.json"}
        with pytest.raises(PublishError, match=r"is not a file of the Transformers\.js layout"):
            publish(*args, BOT_TOKEN, layout_files=layout)
    assert fake_hub.repos[repo_id].pull_requests() == []
