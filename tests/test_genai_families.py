"""Families whose attention or cache departs from Llama's (ALiBi biases, differential
attention, layers run more than once, layers reusing another layer's keys and values) generate
in onnxruntime-genai's generic decoder exactly as in transformers."""

from __future__ import annotations

import onnxruntime_genai as og
import pytest
import torch

from converter import build
from tests.parity.reference import make_checkpoint

PROMPT = [5, 17, 33, 64, 99, 12, 7]
NEW_TOKENS = 8
CASES = ["falcon:alibi", "diffllama", "hrm_text", "dory:last_loop", "gemma3n_text"]


def _genai_greedy(package) -> list[int]:
    model = og.Model(str(package))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(PROMPT) + NEW_TOKENS, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(PROMPT)
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    return tokens


@pytest.mark.parametrize("ep", ["default", "cpu"])
@pytest.mark.parametrize("case", CASES)
def test_genai_greedy_equals_transformers(case, ep, tmp_path):
    model = make_checkpoint(case, tmp_path / "hf")
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )
    build(str(tmp_path / "hf"), ep=ep, progress=False).save(tmp_path / ep, progress=False)
    assert _genai_greedy(tmp_path / ep) == out[0, len(PROMPT) :].tolist()
