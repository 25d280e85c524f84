"""The card's M2M-100 snippet as Transformers.js runs it: its translation pipeline, given
`src_lang` and `tgt_lang`, starts the source with the source language's token and forces the
target's as the first generated token, so a mobius export translates as transformers does with
forced_bos_token_id; without `tgt_lang` the pipeline refuses (the snippet needs the languages)."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from tokenizers import processors

from converter import build
from tests.parity.seq2seq_cases import CASES
from tests.tiny_seq2seq import tokenizer

LANGUAGES = ["__en__", "__fr__"]  # M2M-100's language tokens
TEXT = "the river runs"
OPTIONS = {"max_new_tokens": 6, "no_repeat_ngram_size": 1}


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A tiny M2M-100 with a byte-level tokenizer that Transformers.js reads as M2M-100's."""
    root = tmp_path_factory.mktemp("js-m2m")
    tok = tokenizer()
    tok.add_special_tokens({"additional_special_tokens": LANGUAGES})
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="__en__ $A </s>", special_tokens=[("__en__", len(tok) - 2), ("</s>", 2)]
    )
    tok.save_pretrained(root / "hf")
    settings = json.loads((root / "hf" / "tokenizer_config.json").read_text())
    settings["tokenizer_class"] = "M2M100Tokenizer"
    (root / "hf" / "tokenizer_config.json").write_text(json.dumps(settings))
    config = transformers.AutoConfig.for_model(
        **{**CASES["m2m_100"].config, "vocab_size": len(tok)}
    )
    torch.manual_seed(0)
    model = transformers.M2M100ForConditionalGeneration(config).eval()
    model.save_pretrained(root / "hf")
    build(str(root / "hf"), progress=False).save(root / "js" / "m2m", progress=False)
    return model, tok, root / "js"


def test_translation_with_the_languages_matches_forced_bos(transformers_js, export):
    model, tok, models = export
    ids = tok(TEXT, return_tensors="pt")
    assert ids["input_ids"][0, 0].item() == tok.convert_tokens_to_ids("__en__")
    target = tok.convert_tokens_to_ids("__fr__")
    with torch.no_grad():
        tokens = model.generate(
            **ids, forced_bos_token_id=target, do_sample=False, num_beams=1, **OPTIONS
        )
    assert tokens[0, 1].item() == target
    expected = tok.decode(tokens[0], skip_special_tokens=True)
    assert len(expected) > 1
    request = {
        "models": str(models),
        "model": "m2m",
        "task": "translation",
        "options": {"dtype": "fp32"},
        "calls": [{"inputs": TEXT, "options": {"src_lang": "en", "tgt_lang": "fr", **OPTIONS}}],
    }
    [[result]] = transformers_js.run(request)
    assert result["translation_text"] == expected
    request["calls"] = [{"inputs": TEXT, "options": OPTIONS}]
    with pytest.raises(AssertionError, match='Target language code "undefined" is not valid'):
        transformers_js.run(request)
