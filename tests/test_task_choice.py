"""The task a build makes: `--task`, else the head config.json's `architectures` names, else the
family's default; a head mobius does not convert is refused by name."""

from __future__ import annotations

import json

import pytest
import torch
import transformers

from converter import build
from converter.errors import ConfigError
from converter.registry import family_for
from converter.tasks.choice import task_of
from mobius.cli import main

BERT = family_for("bert")


@pytest.mark.parametrize(
    ("architecture", "task"),
    [
        ("BertModel", "feature-extraction"),
        ("BertForMaskedLM", "fill-mask"),
        ("BertForPreTraining", "fill-mask"),
        ("BertForSequenceClassification", "text-classification"),
        ("BertForTokenClassification", "token-classification"),
        ("BertForQuestionAnswering", "question-answering"),
    ],
)
def test_the_head_in_architectures_picks_the_task(architecture, task):
    assert task_of({"architectures": [architecture]}, BERT, None) == task


def test_neomme_s_retrieval_head_converts_as_feature_extraction():
    neomme = family_for("neomme")
    assert task_of({"architectures": ["NeoMMEForRetrieval"]}, neomme, None) == (
        "feature-extraction"
    )


def test_no_architectures_means_the_family_default():
    assert task_of({}, BERT, None) == "feature-extraction"


@pytest.mark.parametrize("architecture", ["BertForMultipleChoice", "BertLMHeadModel"])
def test_a_head_mobius_does_not_convert_is_refused_by_name(architecture):
    with pytest.raises(ConfigError, match=f"'{architecture}' is a head mobius does not convert"):
        task_of({"architectures": [architecture]}, BERT, None)


def test_the_asked_task_wins_and_must_be_the_family_s():
    assert task_of({"architectures": ["BertForMaskedLM"]}, BERT, "feature-extraction") == (
        "feature-extraction"
    )
    with pytest.raises(ConfigError, match="not text-generation"):
        task_of({}, BERT, "text-generation")


def test_build_task_option_exports_the_base_model_of_a_masked_lm(tmp_path, capsys):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=32,
    )
    transformers.BertForMaskedLM(config).save_pretrained(tmp_path / "hf")
    out = tmp_path / "out"
    args = ["build", "--model", str(tmp_path / "hf"), "--output", str(out), "--no-progress"]
    assert main([*args, "--task", "feature-extraction"]) == 0
    assert json.loads((out / "mobius.json").read_text())["task"] == "feature-extraction"
    assert (out / "onnx" / "model.onnx").is_file() and (out / "config.json").is_file()
    package = build(str(tmp_path / "hf"), progress=False)
    assert package.task.name == "fill-mask"
