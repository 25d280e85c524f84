"""Transformers.js runs converted families beyond Llama: greedy generation from random tiny
checkpoints, in its AutoModelForCausalLM, equals transformers' `generate`. Transformers.js sizes
the first step's empty cache from the graph's declared input shapes, so families whose caches
depart from Llama's run too (learned positions, ALiBi, sliding windows with sinks, MoE)."""

from __future__ import annotations

import pytest

from converter import build
from converter.package.transformers_js import write_layout
from tests.parity.reference import make_checkpoint
from tests.test_genai_families import NEW_TOKENS, PROMPT, transformers_greedy

CASES = (
    "qwen3",  # q/k norms
    "gemma3_text",  # sliding and full layers; Transformers.js numbers positions from 1
    "gpt2",  # learned positions, n_head / n_layer names in config.json
    "bloom",  # ALiBi: positions from the mask
    "olmo2",
    "gpt_oss",  # MoE, attention sinks, sliding layers
)


@pytest.mark.parametrize("case", CASES)
def test_greedy_tokens_equal_transformers(case, transformers_js, tmp_path):
    model = make_checkpoint(case, tmp_path / "hf")
    package = build(str(tmp_path / "hf"), progress=False).save(tmp_path / "pkg", progress=False)
    write_layout([package], tmp_path / "js" / "model", root_files=True)
    kwargs = {"max_new_tokens": NEW_TOKENS, "min_new_tokens": NEW_TOKENS, "do_sample": False}
    request = {
        "models": str(tmp_path / "js"),
        "model": "model",
        "auto": "AutoModelForCausalLM",  # a random checkpoint has no tokenizer: no pipeline
        "calls": [{"generate": {"input_ids": [PROMPT], **kwargs}}],
    }
    [generated] = transformers_js.run(request)
    assert generated["data"][len(PROMPT) :] == transformers_greedy(model)
