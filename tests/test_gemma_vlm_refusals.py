"""Settings the Gemma-based VLM families cannot honour are refused by name, from config.json
(and preprocessor_config.json) alone; so is a text model whose scaling the embedding graph
cannot take over."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import onnx_ir as ir
import pytest

from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.execution_providers import execution_provider
from converter.package.processor_config import gemma3 as gemma3_processor
from converter.registry import family_for
from converter.tasks.vision_language import VLM_TASK
from tests.parity.vlm_cases import CASES


def read(config: dict):
    family = family_for(config["model_type"])
    return family.rules.read(ConfigReader(family.rules.select(config), config["model_type"]))


def changed(case_id: str, change) -> dict:
    config = copy.deepcopy(CASES[case_id].config)
    change(config)
    return config


@pytest.mark.parametrize(
    ("case_id", "change", "message"),
    [
        (
            "gemma3",
            lambda c: c.update(mm_tokens_per_image=8),
            r"'mm_tokens_per_image' = 8 must be the square of a divisor of the tower's 8 patches",
        ),
        (
            "gemma3",
            lambda c: c.update(mm_tokens_per_image=9),
            r"'mm_tokens_per_image' = 9 must be the square",
        ),
        (
            "gemma3",
            lambda c: c["text_config"].update(use_bidirectional_attention=True),
            r"text_config: 'use_bidirectional_attention' = True",
        ),
        (
            "gemma3",
            lambda c: c["vision_config"].update(model_type="clip_vision_model"),
            r"vision_config: 'model_type' = 'clip_vision_model'",
        ),
        (
            "paligemma",
            lambda c: c["text_config"].update(model_type="llama"),
            r"text_config: 'model_type' = 'llama': PaliGemma's decoder converts as gemma or gemma2",
        ),
        (
            "paligemma",
            lambda c: c.update(projection_dim=32),
            r"'projection_dim' = 32 differs from the text model's 'hidden_size' = 64",
        ),
    ],
)
def test_settings_it_cannot_honour_are_refused_by_name(case_id, change, message):
    with pytest.raises(ConfigError, match=message):
        read(changed(case_id, change))


@pytest.mark.parametrize(
    ("pre", "message"),
    [
        ({"do_pan_and_scan": True}, r"'do_pan_and_scan' crops are not supported"),
        ({"size": {"height": 32, "width": 32}}, r"'size' = .* differs from the tower's 16 x 16"),
        ({"resample": 5}, r"'resample' = 5 is not supported"),
        ({"do_normalize": False}, r"'do_normalize' = False is not supported"),
    ],
)
def test_image_processing_genai_cannot_reproduce_is_refused(pre, message):
    with pytest.raises(ConfigError, match=message):
        gemma3_processor(pre, SimpleNamespace(image_size=16))


def test_a_text_model_scaling_all_its_inputs_embeds_is_refused():
    """Granite multiplies inputs_embeds (image features included) inside its decoder; only
    Gemma's scaled word embedding (the token rows alone) moves into the embedding graph."""
    config = changed("llava", lambda c: c["text_config"].update(model_type="granite"))
    config["text_config"]["embedding_multiplier"] = 12.0
    cfg = read(config)
    provider = execution_provider("default", "f32")
    with pytest.raises(ConfigError, match=r"the granite text model scales its inputs_embeds"):
        family_for("llava").model_class(cfg, ir.DataType.FLOAT, provider, VLM_TASK, frozenset())
