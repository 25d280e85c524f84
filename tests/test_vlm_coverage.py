"""Vision-language models are counted like the other scopes: every type of transformers'
image-text-to-text mapping is registered as a VLM (and then in the VLM parity matrix) or listed
as not yet, with its category and the reason; a VLM config never converts as its text model."""

from __future__ import annotations

import pytest
from transformers import AutoConfig
from transformers.models.auto import modeling_auto

from converter.config import model_type_of
from converter.errors import UnsupportedModelError
from converter.not_yet import CATEGORIES
from converter.not_yet_vlm import VLM_NOT_YET
from converter.registry import VLM_SCOPE, coverage, families, scope_of
from tests.parity.cases import model_type_of as case_type
from tests.parity.vlm_cases import CASES

VLM_TYPES = set(modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)


def _vlm() -> set[str]:
    return {t for t, family in families().items() if scope_of(family) == VLM_SCOPE}


def test_every_vlm_type_is_registered_or_listed_not_yet():
    registered = _vlm()
    unaccounted = sorted(VLM_TYPES - registered - set(VLM_NOT_YET))
    assert unaccounted == [], f"neither registered nor in converter/not_yet_vlm.py: {unaccounted}"
    both = sorted(registered & set(VLM_NOT_YET))
    assert both == [], f"registered and still listed as not yet: {both}"


def test_the_vlm_not_yet_table_is_current_and_says_why():
    stale = sorted(set(VLM_NOT_YET) - VLM_TYPES)
    assert stale == [], f"not image-text-to-text types of this transformers: {stale}"
    for model_type, (category, reason) in VLM_NOT_YET.items():
        assert category in CATEGORIES, model_type
        assert len(reason) > 20, model_type


def test_every_registered_vlm_type_is_in_the_parity_matrix():
    tested = {case_type(case) for case in CASES}
    untested = sorted(_vlm() - tested)
    assert untested == [], f"registered without a vision-language parity case: {untested}"
    for case in CASES:
        assert case_type(case) in _vlm(), f"{case}: not a registered vision-language model"


def test_coverage_rows_carry_the_vlm_scope():
    rows = [r for r in coverage() if r["scope"] == VLM_SCOPE]
    assert {r["model_type"] for r in rows} == VLM_TYPES & (_vlm() | set(VLM_NOT_YET))


def _with_both_sections() -> list[str]:
    """The not-yet VLM types whose default config nests a vision and a text model."""
    found = []
    for model_type in sorted(VLM_NOT_YET):
        config = AutoConfig.for_model(model_type).to_dict()
        if isinstance(config.get("vision_config"), dict) and config.get("text_config"):
            found.append(model_type)
    return found


@pytest.mark.parametrize("model_type", _with_both_sections()[:4])
def test_a_vlm_config_is_refused_by_name_not_converted_as_its_text_model(model_type):
    config = AutoConfig.for_model(model_type).to_dict()
    with pytest.raises(UnsupportedModelError) as err:
        model_type_of(config)
    message = str(err.value)
    assert f"model_type {model_type!r} is a vision-language model" in message
    assert VLM_NOT_YET[model_type][1] in message
    assert repr(config["text_config"]["model_type"]) in message


def test_every_listed_vlm_with_both_sections_is_refused():
    for model_type in _with_both_sections():
        with pytest.raises(UnsupportedModelError, match="vision-language model"):
            model_type_of(AutoConfig.for_model(model_type).to_dict())


def test_an_unknown_vlm_type_is_refused_as_one():
    config = {"model_type": "my_vlm", "text_config": {"model_type": "llama"}, "vision_config": {}}
    expected = r"'my_vlm' is a vision-language model.*does not know this type.*'llama'"
    with pytest.raises(UnsupportedModelError, match=expected):
        model_type_of(config)


def test_a_text_only_nested_config_and_a_two_tower_model_still_resolve():
    gemma3 = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text"}}
    assert model_type_of(gemma3) == "gemma3_text"
    assert model_type_of(AutoConfig.for_model("clip").to_dict()) == "clip"
