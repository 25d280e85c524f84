"""An Idefics 2 package beyond the parity matrix (whose case splits images and pads a batch):
validate() feeds its vision graph padded images of its own choice and passes against
transformers; the processor's default path (no splitting) on one image of an odd size matches
transformers; a perceiver whose query heads do not share key/value heads evenly is refused by
name."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import Idefics2ImageProcessorPil

from converter import build
from converter.errors import ConfigError
from converter.validate import validate
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm
from tests.test_vlm_package import edit_config


@pytest.fixture(scope="module")
def idefics2(tmp_path_factory):
    folder = tmp_path_factory.mktemp("idefics2")
    model = make_vlm("idefics2", CASES["idefics2"], folder / "hf")
    build(str(folder / "hf"), progress=False).save(folder / "package", progress=False)
    return model, folder


def test_validate_feeds_padded_images_and_matches_transformers(idefics2):
    _, folder = idefics2
    report = validate(folder / "package", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0
    assert report.max_abs_diff < 1e-4


def test_the_default_processor_path_on_one_image(idefics2):
    model, folder = idefics2
    side = model.config.vision_config.image_size
    processor = Idefics2ImageProcessorPil(size={"shortest_edge": side // 2, "longest_edge": side})
    assert not processor.do_image_splitting
    pixels = np.random.default_rng(2).integers(0, 256, (2 * side, side + 7, 3), dtype=np.uint8)
    image = dict(processor([[pixels]], return_tensors="np"))
    assert image["pixel_values"].shape == (1, 1, 3, side, (side + 7) // 2)
    with torch.no_grad():
        tensors = {k: torch.from_numpy(v) for k, v in image.items()}
        want = torch.cat(list(model.get_image_features(**tensors).pooler_output)).numpy()
    got = OnnxVisionLanguage(folder / "package").image_features(image)
    assert got.shape == want.shape == (4, model.config.text_config.hidden_size)
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_uneven_key_value_heads_are_refused(idefics2, tmp_path):
    _, folder = idefics2
    edit_config(
        folder / "hf",
        tmp_path / "hf",
        lambda c: c["perceiver_config"].update(resampler_n_heads=3),
    )
    with pytest.raises(ConfigError, match="perceiver_config: 'resampler_n_heads' = 3"):
        build(str(tmp_path / "hf"), progress=False)
