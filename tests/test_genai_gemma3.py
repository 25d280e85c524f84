"""A converted tiny Gemma 3 runs in onnxruntime-genai unchanged: its processor (our
processor_config.json) makes the pixel values transformers' image processor makes, expands the
image into the 256 soft tokens genai always gives an image (so the tower here pools a 32 x 32
grid of patches over 2 x 2 cells into 16 x 16 tokens), feeds the decoder input_ids beside
inputs_embeds, and generates from a small image exactly the greedy tokens transformers does
given the token_type_ids its processor makes (an image's tokens attending each other both
ways)."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime_genai as og
import pytest
import torch
import transformers
from PIL import Image

from converter import build
from converter.validate import validate
from tests.parity.vlm_cases import CASES, VlmCase
from tests.parity.vlm_reference import make_vlm
from tests.tiny_vlm import save_tokenizer

NEW_TOKENS = 8
SIDE = 64  # pixels: 32 x 32 patches of 2 pixels
PROMPT = "Look: <start_of_image> What is this?"
SPECIALS = {  # at tests/parity/vlm_cases/gemma3.py's ids
    "<image_soft_token>": 300,
    "<start_of_image>": 301,
    "<end_of_image>": 302,
    "<eos>": 303,
}
PREPROCESSOR = {
    "image_processor_type": "Gemma3ImageProcessor",
    "size": {"height": SIDE, "width": SIDE},
    "resample": 2,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "rescale_factor": 1 / 255,
}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gemma3")
    base = CASES["gemma3"].config
    config = {
        **base,
        "vision_config": {**base["vision_config"], "image_size": SIDE},
        "mm_tokens_per_image": 256,  # onnxruntime-genai's fixed image_seq_length
    }
    model = make_vlm("gemma3-genai", VlmCase(config), folder / "hf")
    save_tokenizer(folder / "hf", SPECIALS, "<eos>")
    (folder / "hf" / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR))
    pixels = np.random.default_rng(0).integers(0, 256, size=(SIDE, SIDE, 3), dtype=np.uint8)
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
    fed = {name: inputs[name].as_numpy() for name in inputs.keys()}  # noqa: SIM118
    processor = transformers.AutoImageProcessor.from_pretrained(folder / "hf")
    image = processor(images=Image.open(folder / "image.png"), return_tensors="np")
    assert np.abs(fed["pixel_values"] - image["pixel_values"]).max() < 1e-5
    ids = fed["input_ids"].astype(np.int64)
    image_tokens = ids == model.config.image_token_id
    assert image_tokens.sum() == 256
    np.testing.assert_array_equal(fed["token_type_ids"], image_tokens)

    params = og.GeneratorParams(genai)
    params.set_search_options(max_length=ids.shape[1] + NEW_TOKENS, do_sample=False)
    generator = og.Generator(genai, params)
    generator.set_inputs(inputs)
    tokens, prompt_logits = [], None
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
        if prompt_logits is None:
            prompt_logits = generator.get_output("logits")

    fed_to_transformers = {
        "input_ids": torch.from_numpy(ids),
        "pixel_values": torch.from_numpy(image["pixel_values"]),
        "token_type_ids": torch.from_numpy(image_tokens.astype(np.int64)),
    }
    with torch.no_grad():
        logits = model(**fed_to_transformers).logits.numpy()
        expected = model.generate(
            **fed_to_transformers,
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )
    # the prompt's logits tell the image's two-way attention from a causal one (~2.6 apart here)
    assert np.abs(prompt_logits - logits).max() < 1e-4
    assert tokens == expected[0, ids.shape[1] :].tolist()


def test_validate_gives_transformers_the_image_token_types(checkpoint):
    """mobius validate's reference is told which tokens are the image's, as the processor
    tells it, so it attends as the package does."""
    _, folder = checkpoint
    build(str(folder / "hf"), progress=False).save(folder / "validated", progress=False)
    report = validate(folder / "validated", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0
