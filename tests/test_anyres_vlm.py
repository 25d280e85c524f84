"""LLaVA-NeXT and LLaVA-OneVision beyond their parity cases: AnyRes in the graph against
transformers on one batch of images of many sizes (grid choice, unpadding, OneVision's
shrinking, token counts), validate(), the newline vector's checkpoint layouts, and the settings
refused by name."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file, save_file

from converter import build
from converter.errors import ConfigError
from converter.validate import validate
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm
from tests.test_vlm_package import edit_config

# (height, width): squares, both aspects of each band, extremes, sizes below one crop and
# above the largest pinpoint
SIZES = [(1, 1), (28, 28), (31, 70), (70, 31), (27, 200), (200, 27), (333, 500), (500, 333)]
SIZES += [(1000, 7), (7, 1000), (13, 14), (56, 56), (57, 55), (100, 100)]


@pytest.fixture(scope="module", params=["llava_next", "llava_onevision"])
def anyres(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    model = make_vlm(request.param, CASES[request.param], folder / "hf")
    build(str(folder / "hf"), progress=False).save(folder / "package", progress=False)
    return model, folder


def sized_images(model, sizes) -> dict[str, np.ndarray]:
    config = model.config
    crop = config.vision_config.image_size
    slots = 1 + max(h * w for h, w in config.image_grid_pinpoints) // crop**2
    shape = (len(sizes), slots, config.vision_config.num_channels, crop, crop)
    image = {
        "pixel_values": np.random.default_rng(0).standard_normal(shape).astype(np.float32),
        "image_sizes": np.array(sizes, dtype=np.int64),
    }
    if "batch_num_images" in inspect.signature(model.get_image_features).parameters:
        image["batch_num_images"] = np.ones(len(sizes), dtype=np.int64)  # each tiled
    return image


def test_any_image_size_packs_as_transformers(anyres):
    model, folder = anyres
    image = sized_images(model, SIZES)
    with torch.no_grad():
        tensors = {k: torch.from_numpy(v) for k, v in image.items()}
        want = torch.cat(model.get_image_features(**tensors).pooler_output).numpy()
    got = OnnxVisionLanguage(folder / "package").image_features(image)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_validate_compares_the_package_with_transformers(anyres):
    _, folder = anyres
    report = validate(folder / "package", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.max_abs_diff < 1e-4


def test_the_newline_binds_from_transformers_5_module_names(anyres, tmp_path):
    model, folder = anyres
    edit_config(folder / "hf", tmp_path / "modules", lambda config: None)
    weights = load_file(tmp_path / "modules" / "model.safetensors")
    weights["model.image_newline"] = weights.pop("image_newline")
    save_file(weights, tmp_path / "modules" / "model.safetensors")
    build(str(tmp_path / "modules"), progress=False).save(tmp_path / "out", progress=False)
    image = sized_images(model, SIZES[:3])
    got = OnnxVisionLanguage(tmp_path / "out").image_features(image)
    want = OnnxVisionLanguage(folder / "package").image_features(image)
    np.testing.assert_array_equal(got, want)


REFUSED = {
    "llava_next": [
        (
            lambda c: c.update(vision_feature_select_strategy="full"),
            r"'vision_feature_select_strategy' = 'full': only 'default' leaves",
        ),
        (
            lambda c: c.update(image_grid_pinpoints=[[28, 56], [30, 56]]),
            r"'image_grid_pinpoints': \[30, 56\] is not a grid of whole crops",
        ),
        (
            lambda c: c.update(image_grid_pinpoints=[[28, 56, 84]]),
            r"'image_grid_pinpoints': \[28, 56, 84\] is not a \[height, width\] pair",
        ),
        (
            lambda c: c.update(image_grid_pinpoints=[]),
            r"'image_grid_pinpoints' must be a list of 1 to",
        ),
    ],
    "llava_onevision": [
        (
            lambda c: c.update(vision_feature_select_strategy="default"),
            r"'vision_feature_select_strategy' = 'default': only 'full' leaves",
        ),
        (
            lambda c: c.update(vision_aspect_ratio="anyres"),
            r"'vision_aspect_ratio' = 'anyres' is not 'anyres_max_N'",
        ),
        (
            lambda c: c["vision_config"].update(model_type="clip_vision_model"),
            r"vision_config: 'model_type' = 'clip_vision_model': LLaVA's vision tower converts "
            r"as siglip_vision_model only",
        ),
    ],
}


def test_settings_it_cannot_honour_are_refused_by_name(anyres, tmp_path):
    model, folder = anyres
    for i, (change, message) in enumerate(REFUSED[model.config.model_type]):
        edit_config(folder / "hf", tmp_path / f"bad{i}", change)
        with pytest.raises(ConfigError, match=message):
            build(str(tmp_path / f"bad{i}"), progress=False)
