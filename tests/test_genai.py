"""The converted tiny Llama runs in onnxruntime-genai unchanged and matches transformers."""

from __future__ import annotations

import json
from pathlib import Path

import onnxruntime_genai as og
import pytest
import torch
import transformers

from converter.cli import main

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


def _genai_greedy(package: Path, prompt_ids: list[int]) -> list[int]:
    model = og.Model(str(package))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt_ids) + NEW_TOKENS, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt_ids)
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    return tokens


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
    generated = _genai_greedy(package, prompt_ids)
    assert len(generated) == NEW_TOKENS
    assert generated == _transformers_greedy(prompt_ids)
