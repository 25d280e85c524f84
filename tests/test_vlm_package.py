"""A vision-language package end to end on LLaVA: what it holds and says about its runtime,
validate() against transformers, the checkpoint layouts it binds, and the settings it refuses
by name."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from converter import build
from converter.errors import ConfigError, WeightsError
from converter.validate import validate
from converter.validate.vlm_runtime import OnnxVisionLanguage
from model_cards.card import SourceInfo, VariantInfo, render
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import case_rng, make_vlm, pixel_inputs, step_tokens


def edit_config(source, target, change):
    """A copy of the checkpoint `source` whose config.json `change` edits in place."""
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    change(config)
    (target / "config.json").write_text(json.dumps(config))


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llava")
    model = make_vlm("llava", CASES["llava"], folder / "hf")
    build(str(folder / "hf"), progress=False).save(folder / "package", progress=False)
    return model, folder


def test_the_package_holds_three_graphs_and_no_genai_config(llava):
    _, folder = llava
    manifest = json.loads((folder / "package" / "mobius.json").read_text())
    assert manifest["task"] == "image-text-to-text"
    assert [c["role"] for c in manifest["components"]] == ["vision", "embedding", "decoder"]
    assert manifest["runtime"] == "onnxruntime"  # onnxruntime-genai has no LLaVA type
    assert not (folder / "package" / "genai_config.json").exists()


def test_validate_compares_the_package_with_transformers(llava):
    _, folder = llava
    report = validate(folder / "package", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0
    assert report.max_abs_diff < 1e-4


def _rewrite(folder, rename):
    weights = load_file(folder / "model.safetensors")
    save_file({rename(k): v for k, v in weights.items()}, folder / "model.safetensors")


def test_the_hub_and_in_memory_layouts_bind_the_same(llava, tmp_path):
    model, folder = llava
    rng = case_rng("layouts")
    image, ids = pixel_inputs(model, rng)
    steps = step_tokens(model, ids.shape[0], rng)
    want = OnnxVisionLanguage(folder / "package").run(image, ids, steps)
    layouts = {
        # transformers 4's: the CLIP tower under vision_model
        "hub": lambda k: k.replace("vision_tower.", "vision_tower.vision_model."),
        # transformers 5's module names
        "modules": lambda k: (
            k.replace("language_model.model.", "model.language_model.")
            .replace("language_model.lm_head.", "lm_head.")
            .replace("vision_tower.", "model.vision_tower.")
            .replace("multi_modal_projector.", "model.multi_modal_projector.")
        ),
    }
    for name, rename in layouts.items():
        source = tmp_path / name
        edit_config(folder / "hf", source, lambda config: None)
        _rewrite(source, rename)
        build(str(source), progress=False).save(tmp_path / f"{name}-out", progress=False)
        got = OnnxVisionLanguage(tmp_path / f"{name}-out").run(image, ids, steps)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_two_names_for_one_tensor_are_refused(llava, tmp_path):
    _, folder = llava
    edit_config(folder / "hf", tmp_path / "both", lambda config: None)
    weights = load_file(tmp_path / "both" / "model.safetensors")
    weights["model.multi_modal_projector.linear_1.bias"] = weights[
        "multi_modal_projector.linear_1.bias"
    ]
    save_file(weights, tmp_path / "both" / "model.safetensors")
    with pytest.raises(WeightsError, match=r"are both 'multi_modal_projector\.linear_1\.bias'"):
        build(str(tmp_path / "both"), progress=False)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c["vision_config"].update(model_type="siglip_vision_model"),
            r"vision_config: 'model_type' = 'siglip_vision_model': LLaVA's vision tower",
        ),
        (lambda c: c.update(vision_feature_layer=7), r"'vision_feature_layer' = 7 must name"),
        (
            lambda c: c.update(vision_feature_select_strategy="pooled"),
            r"'vision_feature_select_strategy' = 'pooled' is not one of default, full",
        ),
        (lambda c: c.update(image_token_index=999), r"'image_token_id' = 999 is outside"),
    ],
)
def test_settings_it_cannot_honour_are_refused_by_name(llava, tmp_path, change, message):
    _, folder = llava
    edit_config(folder / "hf", tmp_path / "bad", change)
    with pytest.raises(ConfigError, match=message):
        build(str(tmp_path / "bad"), progress=False)


def test_the_card_says_onnxruntime_runs_it(llava):
    _, folder = llava
    source = SourceInfo.local(folder / "hf", model_type="llava")
    variant = VariantInfo.from_package(folder / "package")
    text = render(source, [variant], mode="local", command="mobius")
    assert "pipeline_tag: image-text-to-text" in text
    assert "onnxruntime-genai has no type for this architecture" in text
    assert "- onnxruntime-genai" not in text  # not tagged for a runtime that cannot load it
    assert "create_multimodal_processor" not in text
