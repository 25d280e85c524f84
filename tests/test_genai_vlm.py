"""A converted tiny Qwen2.5-VL runs in onnxruntime-genai unchanged: its processor (our
processor_config.json) makes the pixel values transformers' image processor makes, and it
generates from a small image exactly the greedy tokens transformers does."""

from __future__ import annotations

import re
import shutil

import pytest

from converter import build
from converter.validate import validate
from model_cards.card import SourceInfo, VariantInfo, render
from tests.genai_qwen_vl import genai_and_transformers_tokens, make_checkpoint


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qwen2_5_vl")
    return make_checkpoint("qwen2_5_vl", folder), folder


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_genai_generates_what_transformers_does(checkpoint, ep):
    model, folder = checkpoint
    got, expected = genai_and_transformers_tokens(model, folder, ep)
    assert got == expected


def test_validate_runs_the_package_as_genai_does(checkpoint):
    """The probe's image of 2 x 2 merge blocks, its 3-D positions computed from the grid."""
    _, folder = checkpoint
    build(str(folder / "hf"), progress=False).save(folder / "validated", progress=False)
    report = validate(folder / "validated", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0


def test_the_card_snippet_runs(checkpoint, tmp_path, monkeypatch):
    """The local card's genai snippet, run as a reader runs it beside the --output folder."""
    _, folder = checkpoint
    variant = tmp_path / "onnx" / "default-f32"
    build(str(folder / "hf"), progress=False).save(variant, progress=False)
    shutil.copy(folder / "image.png", tmp_path / "image.png")
    source = SourceInfo.local(folder / "hf", model_type="qwen2_5_vl")
    text = render(source, [VariantInfo.from_package(variant)], mode="local", command="mobius")
    assert "pipeline_tag: image-text-to-text" in text
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2 and "create_multimodal_processor" in blocks[1]
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0] + blocks[1], "<card>", "exec"), {})
