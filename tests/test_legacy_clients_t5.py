"""Optimum's ORTModelForSeq2SeqLM (transformers 4.57, its own venv: tests/legacy_clients) runs
T5 exports unchanged: checkpoints saved by transformers 4.57 as the Hub holds them (T5's tied
and scaled head; T5 v1.1 / FLAN-T5's gated-GELU and own lm_head, tie_word_embeddings false)
generate the torch model's greedy tokens on a padded batch through the merged decoder."""

import pytest

from tests.parity.seq2seq_cases.t5 import T5_SIZES
from tests.test_legacy_clients import add_mobius_onnx
from tests.test_legacy_clients_seq2seq import OPTIONS
from tests.test_transformers_js_t5 import TOKENS
from tests.tiny_seq2seq import TEXTS, save_tokenizer

VARIANTS = {
    "t5": {},
    "t5-v1_1": {"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_optimum_generates_the_torch_tokens(legacy_clients, tmp_path, variant):
    folder = tmp_path / variant
    tok = save_tokenizer(folder)
    config = {**T5_SIZES, **TOKENS, "model_type": "t5", "vocab_size": len(tok)}
    legacy_clients("make-seq2seq", folder=str(folder), config={**config, **VARIANTS[variant]})
    add_mobius_onnx(folder, "text2text-generation")
    result = legacy_clients("optimum-seq2seq", folder=str(folder), texts=TEXTS, options=OPTIONS)
    assert result["merged"]
    assert min(min(row) for row in result["attention_mask"]) == 0  # the shorter text is padded
    assert result["onnx"] == result["torch"]
    assert len({tuple(row) for row in result["torch"]}) == len(TEXTS)
