"""The `text-only` build feature: a vision-language repo exported as its text decoder alone, a
plain LLM that onnxruntime-genai runs and that matches transformers' model fed no image; the
feature, and the ones not built yet, refused by name where they mean nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime_genai as og
import pytest
import torch

from converter import build
from converter.cli import main
from converter.errors import ConfigError
from converter.validate import validate
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm
from tests.tiny_vlm import save_side_files

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"
NEW_TOKENS = 8


# each VLM's text model, as onnxruntime-genai names its type
GENAI_TYPES = {
    "llava": "llama",
    "qwen2_5_vl": "qwen2",
    "qwen3_vl": "qwen3",
    "mistral3": "mistral",
    "internvl": "qwen2",
}


@pytest.fixture(scope="module", params=sorted(GENAI_TYPES))
def text_only(request, tmp_path_factory):
    """A tiny VLM and its text-only export (through the CLI) on the cpu EP."""
    folder = tmp_path_factory.mktemp(request.param)
    model = make_vlm(request.param, CASES[request.param], folder / "hf")
    save_side_files(folder / "hf")  # a byte-level tokenizer: genai needs one to load
    argv = ["build", "--model", str(folder / "hf"), "--output", str(folder / "text")]
    assert main([*argv, "--ep", "cpu", "--features", "text-only", "--no-progress"]) == 0
    return request.param, model, folder


def test_the_package_is_a_plain_llm_of_the_text_model(text_only):
    case, model, folder = text_only
    manifest = json.loads((folder / "text" / "mobius.json").read_text())
    assert manifest["features"] == ["text-only"]
    assert manifest["task"] == "text-generation"
    assert [c["role"] for c in manifest["components"]] == ["decoder"]
    assert sorted(p.name for p in (folder / "text").glob("*.onnx")) == ["model.onnx"]
    genai = json.loads((folder / "text" / "genai_config.json").read_text())["model"]
    assert genai["type"] == GENAI_TYPES[case]
    assert "vision" not in genai and "embedding" not in genai
    config = json.loads((folder / "text" / "config.json").read_text())
    assert config["hidden_size"] == model.config.text_config.hidden_size
    assert "vision_config" not in config


def test_validate_matches_transformers_fed_no_image(text_only):
    _, _, folder = text_only
    report = validate(folder / "text", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0
    assert report.max_abs_diff < 1e-4


def test_genai_generates_what_transformers_does_from_text(text_only):
    _, model, folder = text_only
    prompt = np.random.default_rng(3).integers(3, 300, size=6).tolist()
    genai = og.Model(str(folder / "text"))
    params = og.GeneratorParams(genai)
    params.set_search_options(max_length=len(prompt) + NEW_TOKENS, do_sample=False)
    generator = og.Generator(genai, params)
    generator.append_tokens(prompt)
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    with torch.no_grad():
        expected = model.generate(
            torch.tensor([prompt]),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )
    assert tokens == expected[0, len(prompt) :].tolist()


def test_text_only_means_nothing_for_a_text_model():
    with pytest.raises(ConfigError, match="'text-only': llama is not a multimodal model"):
        build(str(TINY_LLAMA), features=["text-only"], progress=False)


@pytest.mark.parametrize(
    ("features", "message"),
    [
        (
            ["text-only,warp-drive"],
            r"unknown feature 'warp-drive': the features are (\S+, )*text-only",
        ),
    ],
)
def test_unknown_and_unbuilt_features_are_refused_by_name(features, message):
    with pytest.raises(ConfigError, match=message):
        build(str(TINY_LLAMA), features=features, progress=False)


def test_the_cli_refuses_an_unknown_feature(tmp_path, capsys):
    argv = ["build", "--model", str(TINY_LLAMA), "--output", str(tmp_path / "out")]
    assert main([*argv, "--features", "text-only", "--features", "warp-drive"]) != 0
    assert "unknown feature 'warp-drive'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
