"""An Idefics 3-layout package (SmolVLM's case) beyond the parity matrix: validate() feeds its
tiled vision graph and passes against transformers, a batch whose every tile is blank still
encodes the first tile, as SmolVLM does; a tile of another size and a scale factor that does not
divide the patch grid are refused by name."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch

from converter import build
from converter.errors import ConfigError
from converter.validate import validate
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm
from tests.test_vlm_package import edit_config


@pytest.fixture(scope="module")
def smolvlm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("smolvlm")
    model = make_vlm("smolvlm", CASES["smolvlm"], folder / "hf")
    build(str(folder / "hf"), progress=False).save(folder / "package", progress=False)
    return model, folder


def test_validate_feeds_the_tiles_and_matches_transformers(smolvlm):
    _, folder = smolvlm
    report = validate(folder / "package", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0
    assert report.max_abs_diff < 1e-4


def test_all_blank_tiles_encode_the_first(smolvlm):
    model, folder = smolvlm
    side = model.config.vision_config.image_size
    image = {
        "pixel_values": np.zeros((1, 2, 3, side, side), np.float32),
        "pixel_attention_mask": np.ones((1, 2, side, side), np.int64),
    }
    with torch.no_grad():
        tensors = {k: torch.from_numpy(v) for k, v in image.items()}
        want = torch.cat(list(model.get_image_features(**tensors).pooler_output)).numpy()
    got = OnnxVisionLanguage(folder / "package").image_features(image)
    assert got.shape == want.shape == (16, model.config.text_config.hidden_size)
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_a_tile_of_another_size_is_refused_by_name(smolvlm):
    model, folder = smolvlm
    side = model.config.vision_config.image_size - model.config.vision_config.patch_size
    image = {
        "pixel_values": np.ones((1, 1, 3, side, side), np.float32),
        "pixel_attention_mask": np.ones((1, 1, side, side), np.int64),
    }
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument, match="pixel_values"):
        OnnxVisionLanguage(folder / "package").image_features(image)


def test_a_scale_factor_that_does_not_divide_the_grid_is_refused(smolvlm, tmp_path):
    _, folder = smolvlm
    edit_config(folder / "hf", tmp_path / "hf", lambda c: c.update(scale_factor=5))
    with pytest.raises(ConfigError, match="'scale_factor' = 5 does not divide the tower's 12"):
        build(str(tmp_path / "hf"), progress=False)
