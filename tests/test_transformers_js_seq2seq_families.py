"""Transformers.js loads the BART-like families it names (Marian, M2M-100/NLLB, Blenderbot,
Blenderbot-small) from their exports unchanged and its generate() gives transformers' greedy
tokens: positions, scaling and each family's own layout as the runtime feeds them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from converter import build
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import make_seq2seq

NEW_TOKENS = 6
OPTIONS = {"max_new_tokens": NEW_TOKENS, "no_repeat_ngram_size": 1}
FAMILIES = ["marian", "m2m_100", "blenderbot", "blenderbot-small"]


@pytest.mark.parametrize("case_id", FAMILIES)
def test_generate_gives_transformers_tokens(transformers_js, tmp_path, case_id):
    case = CASES[case_id]
    model = make_seq2seq(case_id, case, tmp_path / "hf")
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "js" / "f32", progress=False)
    ids = np.random.default_rng(1).integers(3, case.config["vocab_size"], size=(1, 7))
    with torch.no_grad():
        expected = model.generate(
            input_ids=torch.from_numpy(ids), **OPTIONS, do_sample=False, num_beams=1
        )
    request = {
        "models": str(tmp_path / "js"),
        "model": "f32",
        "auto": "AutoModelForSeq2SeqLM",
        "options": {"dtype": "fp32"},
        "calls": [{"generate": {"input_ids": ids.tolist(), **OPTIONS}}],
    }
    [tokens] = transformers_js.run(request)
    assert tokens["data"] == expected[0].tolist()
