"""The converted tiny Llama runs in onnxruntime-genai unchanged and matches transformers."""

from __future__ import annotations

import json
from pathlib import Path

import onnxruntime_genai as og
import pytest
import torch
import transformers

from converter import build
from converter.cli import main
from tests.checkpoints import copy_tiny_llama, edit_config
from tests.genai_greedy import genai_greedy

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"
NEW_TOKENS = 20


@pytest.fixture(scope="module", params=["default", "cpu"])
def package(request, tmp_path_factory) -> Path:
    """The portable graph, and the cpu one (GroupQueryAttention on a shared KV buffer)."""
    out = tmp_path_factory.mktemp(f"tiny-llama-{request.param}")
    argv = ["build", "--model", str(TINY_LLAMA), "--output", str(out), "--no-progress"]
    assert main([*argv, "--ep", request.param]) == 0
    search = json.loads((out / "genai_config.json").read_text())["search"]
    assert search["past_present_share_buffer"] == (request.param == "cpu")
    return out


def _transformers_greedy(prompt_ids: list[int]) -> list[int]:
    model = transformers.AutoModelForCausalLM.from_pretrained(TINY_LLAMA, dtype=torch.float32)
    out = model.generate(
        torch.tensor([prompt_ids]),
        max_new_tokens=NEW_TOKENS,
        min_new_tokens=NEW_TOKENS,
        do_sample=False,
    )
    return out[0, len(prompt_ids) :].tolist()


def test_genai_tokenizer_matches_transformers(package):
    tokenizer = og.Tokenizer(og.Model(str(package)))
    reference = transformers.AutoTokenizer.from_pretrained(TINY_LLAMA)
    text = "The river runs past the old mill."
    expected = reference(text, add_special_tokens=False)["input_ids"]
    assert list(tokenizer.encode(text)) == expected


def test_genai_greedy_equals_transformers(package):
    reference = transformers.AutoTokenizer.from_pretrained(TINY_LLAMA)
    chat = [{"role": "user", "content": "Tell me about the weather by the river."}]
    prompt = reference.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    prompt_ids = list(og.Tokenizer(og.Model(str(package))).encode(prompt))
    assert prompt_ids == reference(prompt, add_special_tokens=False)["input_ids"]
    generated = genai_greedy(package, len(prompt_ids) + NEW_TOKENS, prompt_ids)
    assert len(generated) == NEW_TOKENS
    assert generated == _transformers_greedy(prompt_ids)


def test_genai_config_keeps_every_eos_id_of_generation_config(package):
    generation = json.loads((TINY_LLAMA / "generation_config.json").read_text())
    assert len(generation["eos_token_id"]) > 1  # [1, 5]: the list, not its first id
    genai = json.loads((package / "genai_config.json").read_text())["model"]
    assert genai["eos_token_id"] == generation["eos_token_id"]


def test_genai_config_eos_ids_fall_back_to_config_json(tmp_path):
    folder = copy_tiny_llama(tmp_path / "model")
    (folder / "generation_config.json").unlink()
    edit_config(folder, eos_token_id=[1, 5, 7])
    build(str(folder), progress=False).save(tmp_path / "onnx", progress=False)
    genai = json.loads((tmp_path / "onnx" / "genai_config.json").read_text())["model"]
    assert genai["eos_token_id"] == [1, 5, 7]
