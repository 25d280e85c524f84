"""The pixel-shuffle VLM families (Aya Vision, Command A Vision, InternVL) beyond parity:
validate() against transformers, the Hub's transformers-4 layout of a SigLIP tower, and the
settings they cannot honour refused by name."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from converter import build
from converter.config import ConfigReader
from converter.errors import ConfigError
from converter.registry import family_for
from converter.validate import validate
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import case_rng, make_vlm, pixel_inputs, step_tokens


def test_validate_compares_an_internvl_package_with_transformers(tmp_path):
    make_vlm("internvl", CASES["internvl"], tmp_path / "hf")
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "package", progress=False)
    report = validate(tmp_path / "package", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0
    assert report.max_abs_diff < 1e-4


def test_aya_vision_binds_the_hubs_siglip_layout(tmp_path):
    """Aya Vision's Hub checkpoints (transformers 4) keep the tower under vision_model."""
    model = make_vlm("aya_vision", CASES["aya_vision"], tmp_path / "hf")
    rng = case_rng("aya layout")
    image, ids = pixel_inputs(model, rng)
    steps = step_tokens(model, ids.shape[0], rng)
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "saved", progress=False)
    weights = load_file(tmp_path / "hf" / "model.safetensors")
    hub = {k.replace("vision_tower.", "vision_tower.vision_model."): v for k, v in weights.items()}
    assert any(k.startswith("vision_tower.vision_model.") for k in hub)
    save_file(hub, tmp_path / "hf" / "model.safetensors")
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "hub", progress=False)
    want = OnnxVisionLanguage(tmp_path / "saved").run(image, ids, steps)
    got = OnnxVisionLanguage(tmp_path / "hub").run(image, ids, steps)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def _vision(**change):
    return lambda c: c["vision_config"].update(change)


@pytest.mark.parametrize(
    ("case", "change", "message"),
    [
        (
            "aya_vision",
            lambda c: c.update(vision_feature_select_strategy="default"),
            r"'vision_feature_select_strategy' = 'default' is not supported: SigLIP has no class",
        ),
        (
            "aya_vision",
            lambda c: c.update(vision_feature_layer=[-1, -2]),
            r"'vision_feature_layer' = \[-1, -2\] is not supported: the pixel shuffle reads one",
        ),
        (
            "aya_vision",
            lambda c: c.update(downsample_factor=3),
            r"'downsample_factor' = 3 does not divide the tower's 8 x 8 patch grid",
        ),
        (
            "aya_vision",
            lambda c: c.update(alignment_intermediate_size=47),
            r"'alignment_intermediate_size' = 47 must be even",
        ),
        (
            "cohere2_vision",
            _vision(model_type="clip_vision_model"),
            r"vision_config: 'model_type' = 'clip_vision_model': the vision tower converts as "
            r"siglip_vision_model only",
        ),
        (
            "internvl",
            lambda c: c.update(downsample_ratio=0.3),
            r"'downsample_ratio' = 0.3 is not supported: the pixel shuffle takes 1 / an integer",
        ),
        (
            "internvl",
            lambda c: c.update(vision_feature_select_strategy="full"),
            r"'vision_feature_select_strategy' = 'full' is not supported: keeping the class",
        ),
        (
            "internvl",
            _vision(norm_type="batch_norm"),
            r"vision_config: 'norm_type' = 'batch_norm' is not supported",
        ),
        (
            "internvl",
            _vision(image_size=[32, 64]),
            r"vision_config: 'image_size' = \[32, 64\] is not supported: the pixel shuffle reads "
            r"a square grid",
        ),
    ],
)
def test_settings_they_cannot_honour_are_refused_by_name(case, change, message):
    config = copy.deepcopy(CASES[case].config)
    change(config)
    model_type = config["model_type"]
    with pytest.raises(ConfigError, match=message):
        family_for(model_type).rules.read(ConfigReader(config, model_type))
