"""`mobius validate` on encoder packages: every output of every graph against transformers'
head on a padded batch, or against the default f32 variant without transformers."""

from __future__ import annotations

import pytest
import torch
import transformers

from converter import build
from converter.validate import validate

TINY = {
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
    "pad_token_id": 1,
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("encoders")
    for head in ("BertForMaskedLM", "BertForQuestionAnswering"):
        torch.manual_seed(0)
        getattr(transformers, head)(transformers.BertConfig(**TINY)).save_pretrained(root / head)
    return root


@pytest.mark.parametrize(
    ("head", "ep", "dtype"),
    [
        ("BertForMaskedLM", "default", "f32"),
        ("BertForMaskedLM", "cpu", "f16"),
        # (random weights: int4 noise flips the argmax of QA's two near-uniform rows)
        ("BertForMaskedLM", "cpu", "int4"),
        ("BertForQuestionAnswering", "default", "f32"),
        ("BertForQuestionAnswering", "cpu", "f16"),
    ],
)
def test_encoder_variants_pass_against_transformers(checkpoints, tmp_path, head, ep, dtype):
    package = build(str(checkpoints / head), ep=ep, dtype=dtype, progress=False)
    report = validate(package.save(tmp_path, progress=False))
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
    assert report.greedy_match is None


def test_default_reference_checks_other_variants(checkpoints, tmp_path):
    package = build(str(checkpoints / "BertForMaskedLM"), ep="cpu", dtype="f16", progress=False)
    report = validate(package.save(tmp_path, progress=False), reference="default")
    assert report.status == "passed", report.failures
    assert report.reference == "default-f32"
    assert 0 < report.max_abs_diff <= report.thresholds["max_abs_diff"]


def test_a_package_of_other_weights_fails(checkpoints, tmp_path):
    """Validated against a checkpoint it was not built from, the figures miss the bounds."""
    other = tmp_path / "other"
    torch.manual_seed(1)
    transformers.BertForMaskedLM(transformers.BertConfig(**TINY)).save_pretrained(other)
    package = build(str(checkpoints / "BertForMaskedLM"), progress=False)
    report = validate(package.save(tmp_path / "pkg", progress=False), source=other)
    assert report.status == "failed"
    assert any("max_abs_diff" in failure for failure in report.failures)


def test_an_entity_encoder_passes_against_transformers(tmp_path):
    """LUKE's graph reads entities beside the words: the probe makes them too."""
    config = transformers.LukeConfig(**TINY, entity_vocab_size=16, entity_emb_size=32)
    torch.manual_seed(0)
    transformers.LukeForMaskedLM(config).save_pretrained(tmp_path / "hf")
    package = build(str(tmp_path / "hf"), progress=False)
    report = validate(package.save(tmp_path / "pkg", progress=False))
    assert report.status == "passed", report.failures
