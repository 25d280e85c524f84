"""Encoder-decoder configs: the task a BART checkpoint's architectures pick, settings the graph
does not build refused by name, and a headless BartModel checkpoint (no lm_head, no
final_logits_bias) generating as transformers' ForConditionalGeneration loads it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from converter import build
from converter.config import ConfigReader
from converter.errors import ConfigError
from converter.registry import family_for
from converter.tasks.choice import task_of
from converter.validate.reference import TransformersSeq2Seq
from converter.validate.seq2seq_runtime import OnnxSeq2Seq
from tests.parity.seq2seq_cases.bart import BART_SIZES

BART = family_for("bart")


@pytest.mark.parametrize(
    ("architecture", "task"),
    [
        ("BartForConditionalGeneration", "text2text-generation"),
        ("BartModel", "text2text-generation"),
    ],
)
def test_bart_heads_pick_text2text_generation(architecture, task):
    assert task_of({"architectures": [architecture]}, BART, None) == task
    assert task_of({"architectures": [architecture]}, BART, "summarization") == "summarization"


@pytest.mark.parametrize("architecture", ["BartForSequenceClassification", "BartForCausalLM"])
def test_other_bart_heads_are_refused_by_name(architecture):
    with pytest.raises(ConfigError, match=f"'{architecture}' is a head mobius does not convert"):
        task_of({"architectures": [architecture]}, BART, None)


def read(model_type: str = "bart", **changes):
    family = family_for(model_type)
    raw = {"model_type": model_type, **BART_SIZES, **changes}
    return family.rules.read(ConfigReader(family.rules.select(raw), model_type))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"is_encoder_decoder": False}, "'is_encoder_decoder' = False is not supported"),
        ({"is_decoder": True}, "'is_decoder' = True is not supported"),
        ({"encoder_attention_heads": 5}, "'encoder_attention_heads' = 5"),
        ({"decoder_attention_heads": 8}, "give different head sizes"),
        ({"decoder_start_token_id": 500}, "'decoder_start_token_id' = 500 is outside"),
        ({"activation_function": 3}, "'activation_function' must be a string"),
    ],
)
def test_settings_the_graph_does_not_build_are_refused_by_name(changes, message):
    with pytest.raises(ConfigError, match=message):
        read(**changes)


def test_mbart_reads_pre_norm_and_starts_from_eos_without_a_start_token():
    cfg = read("mbart", decoder_start_token_id=None)
    assert cfg.pre_norm and cfg.embedding_norm
    assert cfg.decoder_start_token_id == BART_SIZES["eos_token_id"]
    assert not read().pre_norm


def test_a_headless_bart_model_checkpoint_generates_as_transformers_loads_it(tmp_path):
    config = transformers.BartConfig(**BART_SIZES)
    torch.manual_seed(0)
    transformers.BartModel(config).save_pretrained(tmp_path / "hf")  # names without "model."
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "onnx", progress=False)
    reference = TransformersSeq2Seq.load(tmp_path / "hf")  # a tied head, zero logits bias
    feeds = {"input_ids": np.array([[0, 5, 9, 33, 2]]), "attention_mask": np.ones((1, 5), int)}
    ids = np.array([[2, 7, 11, 40]])
    expected = np.concatenate(reference.run(feeds, ids, 2), axis=1)
    actual = np.concatenate(OnnxSeq2Seq(tmp_path / "onnx").run(feeds, ids, 2), axis=1)
    assert np.abs(actual - expected).max() <= 1e-4
