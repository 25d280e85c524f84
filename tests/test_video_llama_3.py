"""VideoLLaMA 3 beyond parity: validate() probes its merged-patches vision graph against
transformers, and the settings it cannot honour are refused by name."""

from __future__ import annotations

import pytest

from converter import build
from converter.errors import ConfigError
from converter.validate import validate
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm
from tests.test_vlm_package import edit_config


@pytest.fixture(scope="module")
def video_llama_3(tmp_path_factory):
    folder = tmp_path_factory.mktemp("video_llama_3")
    make_vlm("video_llama_3", CASES["video_llama_3"], folder / "hf")
    build(str(folder / "hf"), progress=False).save(folder / "package", progress=False)
    return folder


def test_validate_compares_the_package_with_transformers(video_llama_3):
    report = validate(video_llama_3 / "package", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.max_abs_diff < 1e-4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c["vision_config"].update(rope_parameters={"rope_type": "linear"}),
            r"vision_config: 'rope_parameters' = .*axial only",
        ),
        (
            lambda c: c["vision_config"].update(num_attention_heads=3),
            r"vision_config: 'hidden_size' = 32 over 'num_attention_heads' = 3",
        ),
        (
            lambda c: c["vision_config"].update(patch_size=[4, 2]),
            r"vision_config: 'patch_size' = \[4, 2\]",
        ),
    ],
)
def test_settings_it_cannot_honour_are_refused_by_name(video_llama_3, tmp_path, change, message):
    edit_config(video_llama_3 / "hf", tmp_path / "bad", change)
    with pytest.raises(ConfigError, match=message):
        build(str(tmp_path / "bad"), progress=False)
