"""GLM-4V's families: the settings they refuse by name, which text models each reads, the
package validated against transformers and the older checkpoint layout it binds (parity
itself: tests/parity/test_vlm_parity.py)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from converter import build
from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.registry import family_for
from converter.validate import validate
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import case_rng, make_vlm, patch_inputs, step_tokens
from tests.test_vlm_llava_like import read
from tests.test_vlm_package import edit_config


def test_glm46v_reads_either_text_model_into_its_decoder_family():
    assert read("glm46v").text_type == "glm4_moe"
    assert read("glm46v", text_config={"model_type": "glm4v_text"}).text_type == "glm4"
    assert read("glm4v").text_type == "glm4"
    assert read("glm_ocr").text.head_dim == 32


def test_the_text_models_keep_transformers_fixed_biases():
    assert read("glm4v").text.qkv_bias and not read("glm4v").text.o_bias
    assert not read("glm_ocr").text.qkv_bias


@pytest.mark.parametrize(
    ("case_id", "change", "message"),
    [
        (
            "glm4v",
            {"text_config": {"model_type": "glm4v_moe_text"}},
            r"text_config: 'model_type' = 'glm4v_moe_text': the text model is one of glm4v_text",
        ),
        (
            "glm4v",
            {"vision_config": {"rope_parameters": {"rope_type": "default"}}},
            r"vision_config: 'rope_parameters' = .* the vision rope is axial only",
        ),
        (
            "glm4v",
            {"vision_config": {"out_hidden_size": 32}},
            r"vision_config: 'out_hidden_size' = 32 differs from the text model's "
            r"'hidden_size' = 64",
        ),
        (
            "glm4v",
            {"text_config": {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}},
            r"text_config: the rope has no 'mrope_section'",
        ),
        (
            "glm_ocr",
            {"vision_config": {"num_heads": 3}},
            r"vision_config: the tower's width 32 over 'num_heads' = 3 must give a head size",
        ),
    ],
)
def test_settings_it_cannot_honour_are_refused_by_name(case_id, change, message):
    with pytest.raises(ConfigError, match=message):
        read(case_id, **change)


def test_the_hub_configs_older_rope_spelling_reads_as_the_new_one():
    """GLM-4.1V's config.json: rope_scaling with the sections, partial_rotary_factor beside."""
    raw = copy.deepcopy(CASES["glm4v"].config)
    text = raw["text_config"]
    del text["rope_parameters"]
    text["rope_scaling"] = {"type": "default", "mrope_section": [1, 1, 2]}
    text.update(partial_rotary_factor=0.5, rope_theta=1e4)
    older = family_for("glm4v").rules.read(ConfigReader(raw, "glm4v")).text.rope
    assert older == read("glm4v").text.rope
    assert older.mrope_section == (1, 1, 2) and older.interleaved and older.dim == 8


@pytest.fixture(scope="module")
def glm4v(tmp_path_factory):
    folder = tmp_path_factory.mktemp("glm4v")
    model = make_vlm("glm4v", CASES["glm4v"], folder / "hf")
    build(str(folder / "hf"), progress=False).save(folder / "package", progress=False)
    return model, folder


def test_validate_compares_the_package_with_transformers(glm4v):
    _, folder = glm4v
    report = validate(folder / "package", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0


def test_the_older_layout_binds_as_transformers_5s(glm4v, tmp_path):
    """The text model's own names under `model.`, the tower under `visual.`."""
    model, folder = glm4v
    rng = case_rng("layouts")
    image, ids = patch_inputs(model, rng)
    steps = step_tokens(model, ids.shape[0], rng)
    want = OnnxVisionLanguage(folder / "package").run(image, ids, steps)
    edit_config(folder / "hf", tmp_path / "older", lambda config: None)
    weights = load_file(tmp_path / "older" / "model.safetensors")
    older = {
        k.replace("model.language_model.", "model.").replace("model.visual.", "visual."): v
        for k, v in weights.items()
    }
    save_file(older, tmp_path / "older" / "model.safetensors")
    build(str(tmp_path / "older"), progress=False).save(tmp_path / "out", progress=False)
    got = OnnxVisionLanguage(tmp_path / "out").run(image, ids, steps)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("case_id", "tied"), [("glm4v", True), ("glm46v", False)])
def test_the_text_sections_tie_counts_where_the_config_forwards_it(case_id, tied):
    assert read(case_id, text_config={"tie_word_embeddings": True}).tie_word_embeddings is tied
