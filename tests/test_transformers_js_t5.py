"""Transformers.js runs the T5 family's exports unchanged: a tiny T5 through its
text2text-generation pipeline on a padded batch, and T5, mT5 and transient-global LongT5
through generate(), each giving transformers' greedy tokens (Transformers.js 4.3 has no
UMT5)."""

from __future__ import annotations

import pytest
import torch
import transformers

from converter import build
from tests.parity.seq2seq_cases.t5 import T5_SIZES
from tests.test_transformers_js_seq2seq import NEW_TOKENS, OPTIONS, generate, greedy
from tests.tiny_seq2seq import TEXTS, save_tokenizer

# the byte tokenizer's <pad> and </s>; T5 starts decoding from the pad token
TOKENS = {"pad_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 1}
FAMILIES = {
    "t5": {"model_type": "t5"},
    "mt5": {"model_type": "mt5"},
    "longt5": {
        "model_type": "longt5",
        "encoder_attention_type": "transient-global",
        "local_radius": 3,
        "global_block_size": 4,
    },
}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("js-t5")
    made = {}
    for name, settings in FAMILIES.items():
        tok = save_tokenizer(root / name)
        config = {**T5_SIZES, **TOKENS, **settings, "vocab_size": len(tok)}
        torch.manual_seed(0)
        config = transformers.AutoConfig.for_model(**config)
        model = transformers.AutoModelForSeq2SeqLM.from_config(config).eval()
        model.save_pretrained(root / name)
        build(str(root / name), progress=False).save(root / "js" / name, progress=False)
        made[name] = model, tok
    return made, root / "js"


def test_t5_pipeline_generates_transformers_text(transformers_js, exports):
    made, models = exports
    model, tok = made["t5"]
    batch = tok(TEXTS, padding=True, return_tensors="pt")
    assert batch["attention_mask"].min() == 0  # the shorter text is padded
    expected = tok.batch_decode(greedy(model, batch), skip_special_tokens=True)
    assert len(set(expected)) == len(TEXTS) and all(expected)
    request = {"models": str(models), "model": "t5", "task": "text2text-generation"}
    [answer] = transformers_js.run({**request, "calls": [{"inputs": TEXTS, "options": OPTIONS}]})
    assert [row["generated_text"] for row in answer] == expected


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_generate_gives_transformers_tokens(transformers_js, exports, name):
    made, models = exports
    model, tok = made[name]
    ids = tok(TEXTS[1:], return_tensors="pt")["input_ids"]
    expected = greedy(model, {"input_ids": ids})
    assert expected.shape[1] == 1 + NEW_TOKENS
    tokens = generate(transformers_js, models, name, "fp32", ids)
    assert tokens["data"] == expected[0].tolist()
