"""Transformers.js runs encoder-decoder exports unchanged: `mobius build` of a tiny BART gives,
through Transformers.js' text2text-generation pipeline and its generate(), transformers' greedy
tokens (each step's repeated tokens banned, so every step's ranking counts) on a padded batch."""

from __future__ import annotations

import pytest
import torch

from converter import build
from tests.tiny_seq2seq import TEXTS, tiny_bart

NEW_TOKENS = 10
OPTIONS = {"max_new_tokens": NEW_TOKENS, "no_repeat_ngram_size": 1}


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    root = tmp_path_factory.mktemp("js-seq2seq")
    model, tok = tiny_bart(root / "hf")
    models = root / "js"
    for dtype in ("f32", "f16", "int8", "int4"):
        build(str(root / "hf"), dtype=dtype, progress=False).save(models / dtype, progress=False)
    return model, tok, models


def greedy(model, batch):
    with torch.no_grad():
        return model.generate(**batch, **OPTIONS, do_sample=False, num_beams=1)


def test_pipeline_generates_transformers_text(transformers_js, export):
    model, tok, models = export
    batch = tok(TEXTS, padding=True, return_tensors="pt")
    assert batch["attention_mask"].min() == 0  # the shorter text is padded
    expected = tok.batch_decode(greedy(model, batch), skip_special_tokens=True)
    assert len(set(expected)) == len(TEXTS) and all(expected)
    request = {"models": str(models), "model": "f32", "task": "text2text-generation"}
    [answer] = transformers_js.run({**request, "calls": [{"inputs": TEXTS, "options": OPTIONS}]})
    assert [row["generated_text"] for row in answer] == expected


def generate(transformers_js, models, dtype: str, js_dtype: str, ids) -> dict:
    request = {
        "models": str(models),
        "model": dtype,
        "auto": "AutoModelForSeq2SeqLM",
        "options": {"dtype": js_dtype},
        "calls": [{"generate": {"input_ids": ids.tolist(), **OPTIONS}}],
    }
    return transformers_js.run(request)[0]


def test_generate_gives_transformers_tokens(transformers_js, export):
    model, tok, models = export
    ids = tok(TEXTS[1:], return_tensors="pt")["input_ids"]
    expected = greedy(model, {"input_ids": ids})
    tokens = generate(transformers_js, models, "f32", "fp32", ids)
    assert tokens["data"] == expected[0].tolist()


# (these wide random weights give logits whose ranking fp16 and int4 rounding reorder after a
# few steps: the numbers are the parity and validation tests' business, here the variants must
# load under their Transformers.js dtype names and generate)
@pytest.mark.parametrize(("dtype", "js_dtype"), [("f16", "fp16"), ("int8", "q8"), ("int4", "q4")])
def test_other_dtypes_load_and_generate(transformers_js, export, dtype, js_dtype):
    _, tok, models = export
    ids = tok(TEXTS[1:], return_tensors="pt")["input_ids"]
    tokens = generate(transformers_js, models, dtype, js_dtype, ids)
    assert tokens["dims"] == [1, 1 + NEW_TOKENS]
