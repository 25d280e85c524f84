"""How a two-tower config.json reads: its own model_type (not its text tower's), each section
over its own type's defaults, the older `*_config_dict` sections, errors naming the section, and
the task CLIPModel & co. convert for."""

from __future__ import annotations

import pytest

from converter.config import ConfigReader, model_type_of
from converter.errors import ConfigError
from converter.registry import family_for
from converter.tasks.choice import task_of
from tests.parity.encoder_cases import CASES


def _read(config: dict):
    family = family_for(model_type_of(config))
    return family.rules.read(ConfigReader(family.rules.select(config), family.model_type))


def test_a_two_tower_config_is_its_own_type_and_a_vlm_is_its_text_model():
    clip = {**CASES["clip"].config, "text_config": {"model_type": "clip_text_model"}}
    assert model_type_of(clip) == "clip"
    gemma3 = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text"}}
    assert model_type_of(gemma3) == "gemma3_text"
    assert model_type_of({"model_type": "llama"}) == "llama"


def test_sections_read_over_their_own_defaults():
    cfg = _read({"model_type": "clip", "text_config": {}, "vision_config": {}})
    assert (cfg.text.vocab_size, cfg.text.eos_token_id, cfg.text.activation) == (
        49408,
        49407,
        "quick_gelu",
    )
    assert (cfg.vision.image_size, cfg.vision.patch_size, cfg.projection_dim) == (224, 32, 512)


def test_an_older_config_dict_replaces_its_section():
    config = {
        "model_type": "clip",
        "text_config": {"eos_token_id": 2, "hidden_size": 64},
        "text_config_dict": {"hidden_size": 128},
        "vision_config": {},
    }
    cfg = _read(config)
    # transformers rebuilds the section from the dict alone: its defaults win over text_config
    assert (cfg.text.hidden_size, cfg.text.eos_token_id) == (128, 49407)


def test_errors_name_the_section():
    config = {"model_type": "clip", "text_config": {}, "vision_config": {"image_size": 30}}
    with pytest.raises(ConfigError, match=r"^vision_config: 'image_size' = 30 is not a multiple"):
        _read(config)
    with pytest.raises(ConfigError, match=r"'text_config' must be a JSON object"):
        _read({"model_type": "clip", "text_config": "clip", "vision_config": {}})


def test_the_two_tower_classes_are_zero_shot_image_classification():
    clip = family_for("clip")
    assert task_of({"architectures": ["CLIPModel"]}, clip, None) == "zero-shot-image-classification"
    assert task_of({}, clip, None) == "zero-shot-image-classification"
    with pytest.raises(ConfigError, match=r"CLIPTextModelWithProjection.* is a head mobius"):
        task_of({"architectures": ["CLIPTextModelWithProjection"]}, clip, None)
    bert = family_for("bert")
    assert task_of({"architectures": ["BertModel"]}, bert, None) == "feature-extraction"
