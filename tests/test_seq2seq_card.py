"""The card of an encoder-decoder export: its task as the pipeline tag, both graphs of each
variant, and usage that generates (Transformers.js' pipeline, Optimum's ORTModelForSeq2SeqLM)."""

from __future__ import annotations

import re

import pytest
import yaml

from converter import build
from converter.validate import validate
from model_cards.card import SourceInfo, VariantInfo, render
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import make_seq2seq

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    root = tmp_path_factory.mktemp("bart-card")
    make_seq2seq("bart", CASES["bart"], root / "hf")
    found = []
    for ep, dtype in (("default", "f32"), ("cpu", "int8")):
        path = build(str(root / "hf"), ep=ep, dtype=dtype, task="translation", progress=False)
        path = path.save(root / f"{ep}-{dtype}", progress=False)
        found.append(VariantInfo.from_package(path, validate(path).as_dict()))
    return found


def test_card_of_a_translation_export(variants):
    source = SourceInfo("acme/tiny-mt", SHA, "bart")
    card = render(
        source, variants, mode="repo", command="mobius convert acme/tiny-mt", repo_id="me/mt"
    )
    front = yaml.safe_load(card.split("---")[1])
    assert front["pipeline_tag"] == "translation"
    assert front["library_name"] == "transformers.js"
    assert (
        "| `onnx/encoder_model.onnx`<br>`onnx/decoder_model_merged.onnx` | default | f32 |" in card
    )
    assert "`onnx/cpu-int8/encoder_model_quantized.onnx`<br>" in card
    assert "sentence-transformers" not in card
    assert card.count("| passed |") == 2
    [js] = re.findall(r"```js\n(.*?)```", card, re.S)
    assert 'pipeline("translation", "me/mt", { dtype: "fp32" })' in js
    assert "{ max_new_tokens: 64 }" in js
    python = re.findall(r"```python\n(.*?)```", card, re.S)
    for block in python:
        compile(block, "<card>", "exec")
    assert 'ORTModelForSeq2SeqLM.from_pretrained("me/mt", subfolder="onnx")' in python[0]
    assert "model.generate(**inputs" in python[0]
