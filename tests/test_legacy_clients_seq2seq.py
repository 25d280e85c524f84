"""Optimum's ORTModelForSeq2SeqLM (transformers 4.57, its own venv: tests/legacy_clients) loads
mobius's encoder-decoder export unchanged, its merged decoder with the cache, and generates
the torch model's greedy tokens on a padded batch (each step's repeated tokens banned, so every
step's ranking counts)."""

from pathlib import Path

from tests.test_legacy_clients import add_mobius_onnx
from tests.tiny_seq2seq import TEXTS, bart_config, save_tokenizer

OPTIONS = {"max_new_tokens": 10, "no_repeat_ngram_size": 1}


def test_optimum_seq2seq_generates_the_torch_tokens(legacy_clients, tmp_path):
    folder = tmp_path / "tiny-bart"
    tok = save_tokenizer(folder)
    legacy_clients("make-seq2seq", folder=str(folder), config=bart_config(len(tok)))
    add_mobius_onnx(folder, "text2text-generation")
    result = legacy_clients("optimum-seq2seq", folder=str(folder), texts=TEXTS, options=OPTIONS)
    onnx = folder / "onnx"
    opened = [Path(f) for f in result["onnx_files"]]
    assert opened == [
        (onnx / n).resolve() for n in ("encoder_model.onnx", "decoder_model_merged.onnx")
    ]
    assert result["merged"]
    assert min(min(row) for row in result["attention_mask"]) == 0  # the shorter text is padded
    assert result["onnx"] == result["torch"]
    assert len({tuple(row) for row in result["torch"]}) == len(TEXTS)
