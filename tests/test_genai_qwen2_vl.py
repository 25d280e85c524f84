"""A converted tiny Qwen2-VL runs in onnxruntime-genai as its qwen2_5_vl type: genai's processor
makes transformers' pixel values and it generates exactly transformers' greedy tokens."""

from __future__ import annotations

import json

import pytest

from tests.genai_qwen_vl import genai_and_transformers_tokens, make_checkpoint


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qwen2_vl")
    return make_checkpoint("qwen2_vl", folder), folder


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_genai_generates_what_transformers_does(checkpoint, ep):
    model, folder = checkpoint
    got, expected = genai_and_transformers_tokens(model, folder, ep)
    assert got == expected
    config = json.loads((folder / ep / "genai_config.json").read_text())["model"]
    assert config["type"] == "qwen2_5_vl" and "window_size" not in config["vision"]
