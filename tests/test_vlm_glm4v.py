"""GLM-4V's families: the settings they refuse by name, and which text models each reads
(parity itself: tests/parity/test_vlm_parity.py)."""

from __future__ import annotations

import copy

import pytest

from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.registry import family_for
from tests.parity.vlm_cases import CASES
from tests.test_vlm_llava_like import read


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
            r"vision_config: 'hidden_size' = 32 over 'num_heads' = 3 must give a head size",
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
