"""Mistral 3 beyond the parity cases: the LM head tied as transformers ties it, transformers
5's module layout, and the settings it refuses by name."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from converter import build
from converter.errors import ConfigError
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import case_rng, make_vlm, sized_inputs, step_tokens
from tests.test_vlm_package import edit_config


@pytest.fixture(scope="module")
def mistral3(tmp_path_factory):
    """The case whose checkpoint has an lm_head of its own (tie_word_embeddings false)."""
    folder = tmp_path_factory.mktemp("mistral3")
    model = make_vlm("mistral3:layer", CASES["mistral3:layer"], folder / "hf")
    build(str(folder / "hf"), progress=False).save(folder / "package", progress=False)
    rng = case_rng("mistral3 package")
    image, ids = sized_inputs(model, rng)
    steps = step_tokens(model, ids.shape[0], rng)
    return (
        folder,
        (image, ids, steps),
        OnnxVisionLanguage(folder / "package").run(image, ids, steps),
    )


def _same_logits(folder, inputs, want):
    build(str(folder), progress=False).save(folder.parent / f"{folder.name}-out", progress=False)
    got = OnnxVisionLanguage(folder.parent / f"{folder.name}-out").run(*inputs)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_checkpoint_head_is_read_though_the_config_ties_it(mistral3, tmp_path):
    """transformers ties by the top-level tie_word_embeddings (true unless stated) only where
    the checkpoint has no lm_head that differs: Hub configs leave the flag out."""
    folder, inputs, want = mistral3
    edit_config(folder / "hf", tmp_path / "untied", lambda c: c.pop("tie_word_embeddings"))
    _same_logits(tmp_path / "untied", inputs, want)


def test_a_default_vision_rope_is_the_axial_one(mistral3, tmp_path):
    """transformers reads Pixtral's "default" rope type as its axial one."""
    folder, inputs, want = mistral3
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    edit_config(
        folder / "hf",
        tmp_path / "default",
        lambda c: c["vision_config"].update(rope_parameters=rope),
    )
    _same_logits(tmp_path / "default", inputs, want)


def test_the_module_layout_binds_the_same(mistral3, tmp_path):
    folder, inputs, want = mistral3
    edit_config(folder / "hf", tmp_path / "modules", lambda c: None)
    path = tmp_path / "modules" / "model.safetensors"
    weights = load_file(path)
    renamed = {
        k.replace("language_model.model.", "model.language_model.")
        .replace("language_model.lm_head.", "lm_head.")
        .replace("vision_tower.", "model.vision_tower.")
        .replace("multi_modal_projector.", "model.multi_modal_projector."): v
        for k, v in weights.items()
    }
    save_file(renamed, path)
    _same_logits(tmp_path / "modules", inputs, want)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c.update(vision_feature_layer=[0, -1]),
            r"'vision_feature_layer' = \[0, -1\] must name one hidden state",
        ),
        (lambda c: c.update(vision_feature_layer=4), r"'vision_feature_layer' = 4 must name"),
        (
            lambda c: c["vision_config"].update(model_type="siglip_vision_model"),
            r"vision_config: 'model_type' = 'siglip_vision_model'",
        ),
        (
            lambda c: c["vision_config"].update(num_attention_heads=16),
            r"vision_config: 'hidden_size' = 32 over 'num_attention_heads' = 16",
        ),
        (
            lambda c: c["vision_config"].update(rope_parameters={"rope_type": "linear"}),
            r"vision_config: 'rope_parameters' = .*axial only",
        ),
    ],
)
def test_settings_it_cannot_honour_are_refused_by_name(mistral3, tmp_path, change, message):
    folder, _, _ = mistral3
    edit_config(folder / "hf", tmp_path / "bad", change)
    with pytest.raises(ConfigError, match=message):
        build(str(tmp_path / "bad"), progress=False)


@pytest.mark.parametrize(
    ("preprocessor", "message"),
    [
        ({"do_normalize": False}, r"'do_normalize' = False is not supported"),
        ({"resample": 2}, r"only bicubic resampling"),
        ({"size": {"height": 64, "width": 64}}, r"'size' must give a 'longest_edge'"),
    ],
)
def test_image_processing_genai_cannot_repeat_is_refused(mistral3, tmp_path, preprocessor, message):
    folder, _, _ = mistral3
    edit_config(folder / "hf", tmp_path / "bad", lambda c: None)
    (tmp_path / "bad" / "preprocessor_config.json").write_text(json.dumps(preprocessor))
    with pytest.raises(ConfigError, match=message):
        build(str(tmp_path / "bad"), progress=False).save(tmp_path / "out", progress=False)
