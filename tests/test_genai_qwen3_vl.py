"""A converted tiny Qwen3-VL (and Qwen3-VL-MoE) runs in onnxruntime-genai unchanged: genai's
processor (our processor_config.json) makes transformers' pixel values, and with the DeepStack
features packed beside the image features it generates exactly transformers' greedy tokens."""

from __future__ import annotations

import json

import pytest

from converter import build
from converter.validate import validate
from tests.genai_qwen_vl import genai_and_transformers_tokens, make_checkpoint

QWEN3_PREPROCESSOR = {"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}


@pytest.fixture(scope="module", params=["qwen3_vl", "qwen3_vl_moe"])
def checkpoint(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    return make_checkpoint(request.param, folder, QWEN3_PREPROCESSOR), folder


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_genai_generates_what_transformers_does(checkpoint, ep):
    model, folder = checkpoint
    got, expected = genai_and_transformers_tokens(model, folder, ep)
    assert got == expected
    config = json.loads((folder / ep / "genai_config.json").read_text())["model"]
    levels = len(model.config.vision_config.deepstack_visual_indexes)
    assert config["type"] == "qwen3_vl"
    assert config["decoder"]["hidden_size"] == model.config.text_config.hidden_size * (1 + levels)


def test_validate_runs_the_package_against_transformers(checkpoint):
    """The probe's image of 2 x 2 merge blocks, its DeepStack features packed and unpacked."""
    _, folder = checkpoint
    build(str(folder / "hf"), progress=False).save(folder / "validated", progress=False)
    report = validate(folder / "validated", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0
