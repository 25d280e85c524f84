"""HunYuanVL's other layouts and refusals: the flat config.json HunyuanOCR ships (the text
model's keys at the top, `xdrope` rope spellings, `attention_head_dim`) and transformers 5's
module names convert to the same graphs as the nested save; the positions a runtime computes
follow XD-RoPE; settings it cannot honour are refused by name."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from converter import build
from converter.errors import ConfigError
from converter.validate.mrope import xdrope_positions
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import case_rng, make_vlm, patch_inputs, step_tokens
from tests.test_vlm_package import edit_config


@pytest.fixture(scope="module")
def hunyuan(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hunyuan_vl")
    model = make_vlm("hunyuan_vl", CASES["hunyuan_vl"], folder / "hf")
    build(str(folder / "hf"), progress=False).save(folder / "package", progress=False)
    return model, folder


def flat(config: dict) -> None:
    """HunyuanOCR's own layout: the text section at the top, its rope in the older spellings."""
    text = config.pop("text_config")
    del text["model_type"]
    rope = text.pop("rope_parameters")
    text["rope_scaling"] = {
        "type": "xdrope",
        "alpha": rope["alpha"],
        "factor": 1.0,
        "xdrope_section": rope["mrope_section"],
    }
    text["rope_theta"] = rope["rope_theta"]
    text["attention_head_dim"] = text.pop("head_dim")
    config.update(text)


def test_the_flat_and_module_layouts_convert_the_same(hunyuan, tmp_path):
    model, folder = hunyuan
    rng = case_rng("layouts")
    image, ids = patch_inputs(model, rng)
    steps = step_tokens(model, ids.shape[0], rng)
    want = OnnxVisionLanguage(folder / "package").run(image, ids, steps)
    edit_config(folder / "hf", tmp_path / "flat", flat)
    edit_config(folder / "hf", tmp_path / "modules", lambda config: None)
    tensors = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    save_file(tensors, tmp_path / "modules" / "model.safetensors")  # transformers 5's names
    for name in ("flat", "modules"):
        build(str(tmp_path / name), progress=False).save(tmp_path / f"{name}-out", progress=False)
        got = OnnxVisionLanguage(tmp_path / f"{name}-out").run(image, ids, steps)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_positions_follow_xdrope(hunyuan):
    model, _ = hunyuan
    image, ids = patch_inputs(model, case_rng("positions"))
    grids = image["image_grid_thw"]
    with torch.no_grad():
        want, _ = model.model.get_rope_index(
            torch.from_numpy(ids),
            torch.from_numpy((ids == model.config.image_token_id).astype(np.int64)),
            image_grid_thw=torch.from_numpy(grids),
        )
    got = xdrope_positions(ids, grids, model.config.image_token_id, 2, rows=4)
    np.testing.assert_array_equal(got, want.numpy())
    assert (got[-1] > 0).any() and (got[-3] != got[0]).any()  # a second image, grid columns


def _rope(**changes):
    return lambda c: c["text_config"]["rope_parameters"].update(changes)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c["vision_config"].update(interpolate_mode="bicubic"),
            r"'interpolate_mode' = 'bicubic' is not supported",
        ),
        (_rope(mrope_section=[4, 4]), r"'rope_parameters.mrope_section' = \[4, 4\]"),
        (_rope(alpha=None), r"'rope_parameters' = .* a dynamic rope's frequencies follow"),
        (
            _rope(xdrope_section=[2, 2, 2, 2]),
            r"'rope_parameters.xdrope_section' = \[2, 2, 2, 2\] differs",
        ),
    ],
)
def test_settings_it_cannot_honour_are_refused_by_name(hunyuan, tmp_path, change, message):
    _, folder = hunyuan
    edit_config(folder / "hf", tmp_path / "bad", change)
    with pytest.raises(ConfigError, match=message):
        build(str(tmp_path / "bad"), progress=False)


def test_the_manifest_names_the_position_rule(hunyuan):
    _, folder = hunyuan
    manifest = json.loads((folder / "package" / "mobius.json").read_text())
    assert manifest["position_rule"] == "xdrope"
    assert manifest["runtime"] == "onnxruntime"  # onnxruntime-genai has no HunYuanVL type
