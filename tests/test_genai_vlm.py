"""A converted tiny Qwen2.5-VL runs in onnxruntime-genai unchanged: its processor (our
processor_config.json) makes the pixel values transformers' image processor makes, and it
generates from a small image exactly the greedy tokens transformers does."""

from __future__ import annotations

import re
import shutil

import numpy as np
import onnxruntime_genai as og
import pytest
import torch
import transformers
from PIL import Image

from converter import build
from converter.validate import validate
from model_cards.card import SourceInfo, VariantInfo, render
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm
from tests.tiny_vlm import SPECIALS, save_side_files

NEW_TOKENS = 8
PROMPT = "<|vision_start|><|image_pad|><|vision_end|>What is this?"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qwen2_5_vl")
    model = make_vlm("qwen2_5_vl", CASES["qwen2_5_vl"], folder / "hf")
    save_side_files(folder / "hf")
    pixels = np.random.default_rng(0).integers(0, 256, size=(24, 32, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(folder / "image.png")
    return model, folder


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_genai_generates_what_transformers_does(checkpoint, ep):
    model, folder = checkpoint
    build(str(folder / "hf"), ep=ep, progress=False).save(folder / ep, progress=False)
    genai = og.Model(str(folder / ep))
    inputs = genai.create_multimodal_processor()(
        PROMPT, images=og.Images.open(str(folder / "image.png"))
    )
    names = inputs.keys()  # og.NamedTensors is not iterable
    fed = {name: inputs[name].as_numpy() for name in names}
    processor = transformers.AutoImageProcessor.from_pretrained(folder / "hf")
    image = processor(images=Image.open(folder / "image.png"), return_tensors="np")
    np.testing.assert_array_equal(fed["image_grid_thw"], image["image_grid_thw"])
    assert np.abs(fed["pixel_values"] - image["pixel_values"]).max() < 1e-5
    ids = fed["input_ids"].astype(np.int64)
    assert (ids == SPECIALS["<|image_pad|>"]).sum() == 6 * 8 // 4  # the 24x32 image's tokens

    params = og.GeneratorParams(genai)
    params.set_search_options(max_length=ids.shape[1] + NEW_TOKENS, do_sample=False)
    generator = og.Generator(genai, params)
    generator.set_inputs(inputs)
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))

    with torch.no_grad():
        expected = model.generate(
            input_ids=torch.from_numpy(ids),
            pixel_values=torch.from_numpy(image["pixel_values"]),
            image_grid_thw=torch.from_numpy(image["image_grid_thw"]),
            mm_token_type_ids=torch.from_numpy(
                (ids == model.config.image_token_id).astype(np.int64)
            ),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )
    assert tokens == expected[0, ids.shape[1] :].tolist()


def test_validate_runs_the_package_as_genai_does(checkpoint):
    """The probe's image of 2 x 2 merge blocks, its 3-D positions computed from the grid."""
    _, folder = checkpoint
    build(str(folder / "hf"), progress=False).save(folder / "validated", progress=False)
    report = validate(folder / "validated", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0


def test_the_card_snippet_runs(checkpoint, tmp_path, monkeypatch):
    """The local card's genai snippet, run as a reader runs it beside the --output folder."""
    _, folder = checkpoint
    variant = tmp_path / "onnx" / "default-f32"
    build(str(folder / "hf"), progress=False).save(variant, progress=False)
    shutil.copy(folder / "image.png", tmp_path / "image.png")
    source = SourceInfo.local(folder / "hf", model_type="qwen2_5_vl")
    text = render(source, [VariantInfo.from_package(variant)], mode="local", command="mobius")
    assert "pipeline_tag: image-text-to-text" in text
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2 and "create_multimodal_processor" in blocks[1]
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0] + blocks[1], "<card>", "exec"), {})
