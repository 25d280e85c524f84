"""LLaVA's simpler relatives (VipLLaVA, Video-LLaVA's image path, DeepSeek-VL): the settings
they read as transformers does (older key spellings, which level ties the head), and the other
checkpoint layouts they bind (parity itself: tests/parity/test_vlm_parity.py)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from converter import build
from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.registry import family_for
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import case_rng, make_vlm, pixel_inputs, step_tokens
from tests.test_vlm_package import edit_config


def read(case_id: str, **changes):
    """The case's config as its family reads it, with `changes` (None: the key left out)."""
    raw = copy.deepcopy(CASES[case_id].config)
    for key, value in changes.items():
        section = raw
        if isinstance(value, dict):
            section = raw[key]
            [(key, value)] = value.items()
        section.pop(key, None)
        if value is not None:
            section[key] = value
    family = family_for(raw["model_type"])
    return family.rules.read(ConfigReader(raw, raw["model_type"]))


def test_vipllava_reads_the_older_spelling_of_its_feature_layers():
    cfg = read("vipllava", vision_feature_layer=None, vision_feature_layers=[-2, 1])
    assert cfg.extra["feature_layers"] == (2, 1)
    with pytest.raises(ConfigError, match=r"'vision_feature_layers' = \[-2, 9\] must name"):
        read("vipllava", vision_feature_layers=[-2, 9])


@pytest.mark.parametrize(
    ("case_id", "change", "message"),
    [
        (
            "deepseek_vl",
            {"vision_config": {"model_type": "clip_vision_model"}},
            r"vision_config: 'model_type' = 'clip_vision_model': DeepSeek-VL's vision tower "
            "converts as siglip_vision_model only",
        ),
        (
            "video_llava",
            {"vision_feature_select_strategy": "pooled"},
            r"'vision_feature_select_strategy' = 'pooled' is not one of default, full",
        ),
        (
            "vipllava",
            {"projector_layernorm_eps": -1},
            r"'projector_layernorm_eps' = -1 must be a finite positive number",
        ),
    ],
)
def test_settings_it_cannot_honour_are_refused_by_name(case_id, change, message):
    with pytest.raises(ConfigError, match=message):
        read(case_id, **change)


@pytest.mark.parametrize(
    ("case_id", "top", "text", "tied"),
    [
        ("deepseek_vl", None, None, True),  # DeepseekVLConfig ties by default
        ("deepseek_vl", False, True, False),  # its config reads the top level only
        ("vipllava", None, True, False),
        ("video_llava", None, True, False),
        ("llava", None, True, True),  # LlavaConfig honours the text section's too
        ("llava", True, False, True),
    ],
)
def test_the_head_is_tied_as_transformers_ties_it(case_id, top, text, tied):
    cfg = read(case_id, tie_word_embeddings=top, text_config={"tie_word_embeddings": text})
    assert cfg.tie_word_embeddings is tied


# each family's checkpoint names -> the other layouts its checkpoints come in
LAYOUTS = {
    "video_llava": {
        # transformers 4's: each CLIP tower under vision_model
        "hub": lambda k: k.replace("image_tower.", "image_tower.vision_model.").replace(
            "video_tower.", "video_tower.vision_model."
        ),
        # transformers 5's module names
        "modules": lambda k: (
            k.replace("language_model.model.", "model.language_model.")
            .replace("language_model.lm_head.", "lm_head.")
            .replace("image_tower.", "model.image_tower.")
            .replace("video_tower.", "model.video_tower.")
            .replace("multi_modal_projector.", "model.multi_modal_projector.")
        ),
    },
    # transformers 4's SiglipVisionModel wrapped its tower in vision_model
    "deepseek_vl": {
        "hub": lambda k: k.replace("model.vision_model.", "model.vision_model.vision_model.")
    },
}


@pytest.mark.parametrize("case_id", sorted(LAYOUTS))
def test_the_other_layouts_bind_the_same(case_id, tmp_path):
    model = make_vlm(case_id, CASES[case_id], tmp_path / "hf")
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "package", progress=False)
    rng = case_rng("layouts")
    image, ids = pixel_inputs(model, rng)
    steps = step_tokens(model, ids.shape[0], rng)
    want = OnnxVisionLanguage(tmp_path / "package").run(image, ids, steps)
    for name, rename in LAYOUTS[case_id].items():
        source = tmp_path / name
        edit_config(tmp_path / "hf", source, lambda config: None)
        weights = load_file(source / "model.safetensors")
        renamed = {rename(k): v for k, v in weights.items()}
        assert renamed.keys() != weights.keys(), name
        save_file(renamed, source / "model.safetensors")
        build(str(source), progress=False).save(tmp_path / f"{name}-out", progress=False)
        got = OnnxVisionLanguage(tmp_path / f"{name}-out").run(image, ids, steps)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
