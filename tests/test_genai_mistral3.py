"""A converted tiny Mistral 3 runs in onnxruntime-genai unchanged: its processor (our
processor_config.json) makes the padded pixel values and image sizes transformers' Pixtral
image processor makes, expands each [IMG] of the prompt into the image's rows of tokens, runs
the vision graph image by image, and generates from two images of different sizes exactly the
greedy tokens transformers does."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import onnxruntime_genai as og
import pytest
import torch
import transformers
from PIL import Image
from tokenizers import Tokenizer

from converter import build
from converter.validate import validate
from model_cards.card import SourceInfo, VariantInfo, render
from tests.genai_greedy import genai_greedy
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm
from tests.tiny_vlm import save_tokenizer

NEW_TOKENS = 8
# Pixtral's special tokens at tests/parity/vlm_cases/mistral3.py's ids
SPECIALS = {"[IMG]": 300, "[IMG_BREAK]": 301, "[IMG_END]": 302, "</s>": 303, "[INST]": 304}
PREPROCESSOR = {
    "image_processor_type": "PixtralImageProcessor",
    "patch_size": 8,  # the tower's 4-pixel patches x 2 a side per merge block
    "size": {"longest_edge": 64},
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "rescale_factor": 1 / 255,
}
SIZES = [(24, 32), (16, 24)]  # (height, width): whole merge blocks, kept by both resizes
PROMPT = "[INST]What is[IMG]beside[IMG]?"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mistral3")
    model = make_vlm("mistral3", CASES["mistral3"], folder / "hf")
    save_tokenizer(folder / "hf", SPECIALS, "</s>")
    (folder / "hf" / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR))
    rng = np.random.default_rng(0)
    for i, (height, width) in enumerate(SIZES):
        pixels = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"image{i}.png")
    return model, folder


def image_rows(height: int, width: int) -> list[int]:
    """An image's tokens as Pixtral's processor writes them: a row of [IMG] per row of merge
    blocks, each ended by [IMG_BREAK], the last by [IMG_END]."""
    rows, cols = height // 8, width // 8
    tokens = []
    for row in range(rows):
        tokens += [SPECIALS["[IMG]"]] * cols
        tokens.append(SPECIALS["[IMG_END]" if row == rows - 1 else "[IMG_BREAK]"])
    return tokens


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_genai_generates_what_transformers_does(checkpoint, ep):
    model, folder = checkpoint
    build(str(folder / "hf"), ep=ep, progress=False).save(folder / ep, progress=False)
    genai = og.Model(str(folder / ep))
    paths = [str(folder / f"image{i}.png") for i in range(len(SIZES))]
    inputs = genai.create_multimodal_processor()(PROMPT, images=og.Images.open(*paths))
    names = inputs.keys()  # og.NamedTensors is not iterable
    fed = {name: inputs[name].as_numpy() for name in names}
    processor = transformers.AutoImageProcessor.from_pretrained(folder / "hf")
    image = processor(images=[Image.open(p) for p in paths], return_tensors="np")
    np.testing.assert_array_equal(fed["image_sizes"], np.array(SIZES))
    np.testing.assert_array_equal(image["image_sizes"], np.array(SIZES))
    assert np.abs(fed["pixel_values"] - image["pixel_values"]).max() < 1e-5
    ids = fed["input_ids"].astype(np.int64)
    text = Tokenizer.from_file(str(folder / "hf" / "tokenizer.json"))

    def words(piece: str) -> list[int]:
        return text.encode(piece).ids

    expanded = [SPECIALS["[INST]"], *words("What is"), *image_rows(*SIZES[0])]
    expanded += [*words("beside"), *image_rows(*SIZES[1]), *words("?")]
    assert ids[0].tolist() == expanded

    tokens = genai_greedy(genai, ids.shape[1] + NEW_TOKENS, inputs=inputs)

    with torch.no_grad():
        expected = model.generate(
            input_ids=torch.from_numpy(ids),
            pixel_values=torch.from_numpy(image["pixel_values"]),
            image_sizes=torch.from_numpy(image["image_sizes"]),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )
    assert tokens == expected[0, ids.shape[1] :].tolist()


def test_validate_runs_the_package_as_genai_does(checkpoint):
    """The probe's image of 2 x 2 merge blocks and its size."""
    _, folder = checkpoint
    build(str(folder / "hf"), progress=False).save(folder / "validated", progress=False)
    report = validate(folder / "validated", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0


def test_the_card_snippet_runs(checkpoint, tmp_path, monkeypatch):
    """The local card's genai snippet (one image: genai runs the vision graph once), run as a
    reader runs it beside the --output folder."""
    _, folder = checkpoint
    variant = tmp_path / "onnx" / "default-f32"
    build(str(folder / "hf"), progress=False).save(variant, progress=False)
    shutil.copy(folder / "image0.png", tmp_path / "image.png")
    source = SourceInfo.local(folder / "hf", model_type="mistral3")
    text = render(source, [VariantInfo.from_package(variant)], mode="local", command="mobius")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2 and 'prompt = "[IMG]Describe this image."' in blocks[1]
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0] + blocks[1], "<card>", "exec"), {})
