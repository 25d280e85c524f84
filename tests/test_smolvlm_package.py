"""An Idefics 3-layout package (SmolVLM's case) beyond the parity matrix: validate() feeds its
tiled vision graph and passes against transformers, and a batch whose every tile is blank still
encodes the first tile, as SmolVLM does."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from converter import build
from converter.validate import validate
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm


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
