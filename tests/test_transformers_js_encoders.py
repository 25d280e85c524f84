"""Transformers.js runs encoder exports unchanged: `mobius build` of a tiny BERT with a
WordPiece tokenizer gives, through Transformers.js' pipelines, transformers' mean-pooled
embeddings (feature-extraction) and a classifier's labels and scores (text-classification)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from converter import build

TEXTS = ["the river runs past the old mill", "a small boat rests by the green bank in warm light"]
VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    *sorted({w for t in TEXTS for w in t.split()}),
]
LABELS = {0: "CALM", 1: "STORMY", 2: "FOGGY"}


def checkpoint(folder, head: str, **config):
    """A random BERT `head` with a WordPiece tokenizer over VOCAB, saved to `folder`."""
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(folder / "vocab.txt"))
    tokenizer.save_pretrained(folder)
    bert = transformers.BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        pad_token_id=0,
        initializer_range=0.3,  # outputs that depend on the text, labels that differ
        **config,
    )
    torch.manual_seed(0)
    model = getattr(transformers, head)(bert)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.05)
    model.eval().save_pretrained(folder)
    return model, tokenizer


def export(tmp_path, head: str, **config):
    """(transformers model, tokenizer, the folder holding the export "model")."""
    model, tokenizer = checkpoint(tmp_path / "hf", head, **config)
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "js" / "model", progress=False)
    return model, tokenizer, tmp_path / "js"


def test_feature_extraction_gives_transformers_mean_pooled_embeddings(transformers_js, tmp_path):
    model, tokenizer, models = export(tmp_path, "BertModel")
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    assert batch["attention_mask"].min() == 0  # the shorter text is padded
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    expected = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
    request = {"models": str(models), "model": "model", "task": "feature-extraction"}
    call = {"inputs": TEXTS, "options": {"pooling": "mean", "normalize": False}}
    [embeddings] = transformers_js.run({**request, "calls": [call]})
    assert embeddings["dims"] == list(expected.shape)
    actual = np.array(embeddings["data"]).reshape(expected.shape)
    assert np.abs(actual - expected).max() <= 1e-4


def test_text_classification_gives_transformers_labels(transformers_js, tmp_path):
    config = {"id2label": LABELS, "label2id": {v: k for k, v in LABELS.items()}}
    model, tokenizer, models = export(tmp_path, "BertForSequenceClassification", **config)
    with torch.no_grad():
        logits = model(**tokenizer(TEXTS, padding=True, return_tensors="pt")).logits
    probabilities = logits.softmax(-1).numpy()
    assert len(set(probabilities.argmax(-1))) == len(TEXTS)  # one label per text
    request = {"models": str(models), "model": "model", "task": "text-classification"}
    call = {"inputs": TEXTS, "options": {"top_k": None}}
    [ranked] = transformers_js.run({**request, "calls": [call]})
    assert len(ranked) == len(TEXTS)
    for row, expected in zip(ranked, probabilities, strict=True):
        assert row[0]["label"] == LABELS[int(expected.argmax())]
        scores = {entry["label"]: entry["score"] for entry in row}
        assert scores == pytest.approx({LABELS[i]: p for i, p in enumerate(expected)}, abs=1e-4)
