"""Encoder-decoder cards by kind: the family's task as the pipeline tag, and usage only for the
libraries that run the export (model_cards/runtimes.py): Transformers.js' snippet, tag and
library_name where it maps the type, Optimum's where it loads it, a plain sentence otherwise;
M2M-100/NLLB translation names its languages."""

from __future__ import annotations

import re

import pytest
import yaml

from converter import build
from model_cards.card import SourceInfo, VariantInfo, render
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import make_seq2seq

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """The default-f32 variant of `model_type`'s parity case, built once per type."""
    root = tmp_path_factory.mktemp("seq2seq-cards")
    built = {}

    def variant(model_type: str) -> VariantInfo:
        if model_type not in built:
            make_seq2seq(model_type, CASES[model_type], root / model_type)
            package = build(str(root / model_type), progress=False)
            path = package.save(root / f"{model_type}-export", progress=False)
            built[model_type] = VariantInfo.from_package(path, None)
        return built[model_type]

    return variant


def _card(variant: VariantInfo, pipeline_tag: str | None = None) -> tuple[dict, str]:
    source = SourceInfo("acme/tiny", SHA, variant.manifest["model_type"], pipeline_tag=pipeline_tag)
    card = render(source, [variant], mode="repo", command="mobius convert x", repo_id="me/out")
    return yaml.safe_load(card.split("---")[1]), card


def _blocks(card: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", card, re.S)


# model_type: (pipeline tag, Transformers.js runs it, Optimum runs it)
KINDS = {
    "marian": ("translation", True, True),
    "m2m_100": ("translation", True, True),
    "pegasus": ("summarization", False, True),
    "led": ("summarization", False, True),
    "fsmt": ("translation", False, False),
    "bart": ("text2text-generation", True, True),
    "t5": ("text2text-generation", True, True),
    "speech_to_text": ("automatic-speech-recognition", False, True),
    "whisper": ("automatic-speech-recognition", True, True),
}


@pytest.mark.parametrize("model_type", sorted(KINDS))
def test_the_card_offers_the_libraries_that_run_the_export(export, model_type):
    tag, js, optimum = KINDS[model_type]
    front, card = _card(export(model_type))
    assert front["pipeline_tag"] == tag
    assert ("transformers.js" in front["tags"]) is js
    assert front.get("library_name") == ("transformers.js" if js else None)
    js_blocks = _blocks(card, "js")
    assert len(js_blocks) == int(js)
    if js:
        assert f'pipeline("{tag}", "me/out", {{ dtype: "fp32" }})' in js_blocks[0]
        assert card.startswith("---") and "for ONNX Runtime and Transformers.js" in card
    else:
        assert f"Transformers.js (4.3.1) does not load `{model_type}` encoder-decoders" in card
        assert "for ONNX Runtime\n" in card
    python = _blocks(card, "python")
    for block in python:
        compile(block, "<card>", "exec")
    loads = [b for b in python if "from optimum.onnxruntime import" in b]
    assert len(loads) == int(optimum)
    if not optimum:
        assert f"Optimum (0.1.0) does not load `{model_type}` exports:" in card
        assert "this export is for onnxruntime." in card
    assert any("ort.InferenceSession" in b for b in python)


def test_m2m_100_translation_names_the_target_language(export):
    _, card = _card(export("m2m_100"))
    [js] = _blocks(card, "js")
    assert '{ src_lang: "en", tgt_lang: "fr", max_new_tokens: 64 }' in js
    assert '"fra_Latn"' in js  # NLLB's codes, named beside M2M-100's
    [optimum] = [b for b in _blocks(card, "python") if "ORTModelForSeq2SeqLM" in b]
    assert 'AutoTokenizer.from_pretrained("me/out", src_lang="en")' in optimum
    assert "generate(**inputs, forced_bos_token_id=target, max_new_tokens=64)" in optimum
    _, marian = _card(export("marian"))
    assert "tgt_lang" not in marian and "forced_bos_token_id" not in marian


def test_t5_cards_say_which_checkpoints_optimum_runs(export):
    _, card = _card(export("t5"))
    assert "Optimum runs it only where d_model = num_heads × d_kv" in card
    _, bart = _card(export("bart"))
    assert "d_kv" not in bart


def test_the_source_s_pipeline_tag_wins_the_metadata_not_the_snippet(export):
    front, card = _card(export("bart"), pipeline_tag="summarization")
    assert front["pipeline_tag"] == "summarization"
    [js] = _blocks(card, "js")
    assert 'pipeline("text2text-generation", "me/out"' in js
