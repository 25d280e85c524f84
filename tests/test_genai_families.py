"""onnxruntime-genai runs converted families unchanged: greedy generation from random tiny
checkpoints equals transformers' `generate`, for families genai names and for those it runs as
its generic "decoder" type, including the ones whose attention or cache departs from Llama's
(ALiBi biases, differential attention, layers run more than once, layers reusing another
layer's keys and values)."""

from __future__ import annotations

import json

import pytest
import torch

from converter import build
from tests.genai_greedy import genai_greedy
from tests.parity.reference import make_checkpoint

PROMPT = [5, 17, 33, 8, 91, 4]
NEW_TOKENS = 16
CASES = {  # case -> the genai model type its package declares
    "qwen3": "qwen3",
    "helium": "decoder",  # interleaved rope, no genai type of its own
    "exaone4": "decoder",  # sliding and rope-free full layers
    "gpt2": "decoder",  # learned positions
    "opt": "decoder",  # learned positions with an offset
    "bloom": "decoder",  # ALiBi: positions from the mask, no rotary
    "falcon:alibi": "decoder",
    "diffllama": "decoder",  # differential attention
    "hrm_text": "decoder",  # layers run more than once, one cache each
    "dory:last_loop": "decoder",
    "gemma3n_text": "decoder",  # layers reusing another layer's keys and values
    "minicpm3": "decoder",  # multi-head latent attention: a latent cache, one shared head
}


@pytest.mark.parametrize("ep", ["default", "cpu"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_genai_greedy_equals_transformers(case, ep, tmp_path):
    model = make_checkpoint(case, tmp_path / "hf")
    build(str(tmp_path / "hf"), ep=ep, progress=False).save(tmp_path / "onnx", progress=False)
    genai = json.loads((tmp_path / "onnx" / "genai_config.json").read_text())["model"]
    assert genai["type"] == CASES[case]
    generated = genai_greedy(tmp_path / "onnx", len(PROMPT) + NEW_TOKENS, PROMPT)
    assert len(generated) == NEW_TOKENS
    assert generated == transformers_greedy(model)


def transformers_greedy(model) -> list[int]:
    """transformers' greedy tokens after PROMPT: the reference for genai's."""
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )
    return out[0, len(PROMPT) :].tolist()
