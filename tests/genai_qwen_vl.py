"""What the Qwen-VL families' onnxruntime-genai tests share: a tiny checkpoint of a parity case
with the side files genai needs, genai's greedy tokens from a small PNG and transformers' from
the same pixels (its image processor's, checked equal to genai's processor)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime_genai as og
import torch
import transformers
from PIL import Image

from converter import build
from tests.genai_greedy import genai_greedy
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm
from tests.tiny_vlm import SPECIALS, save_side_files

NEW_TOKENS = 8
PROMPT = "<|vision_start|><|image_pad|><|vision_end|>What is this?"


def make_checkpoint(case_id: str, folder: Path, preprocessor: dict | None = None):
    """The case's random model saved under folder/hf with its side files, and a 24x32 PNG."""
    model = make_vlm(case_id, CASES[case_id], folder / "hf")
    save_side_files(folder / "hf", preprocessor)
    pixels = np.random.default_rng(0).integers(0, 256, size=(24, 32, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(folder / "image.png")
    return model


def genai_and_transformers_tokens(model, folder: Path, ep: str) -> tuple[list[int], list[int]]:
    build(str(folder / "hf"), ep=ep, progress=False).save(folder / ep, progress=False)
    genai = og.Model(str(folder / ep))
    inputs = genai.create_multimodal_processor()(
        PROMPT, images=og.Images.open(str(folder / "image.png"))
    )
    fed = {name: inputs[name].as_numpy() for name in inputs.keys()}  # noqa: SIM118 (not iterable)
    processor = transformers.AutoImageProcessor.from_pretrained(folder / "hf")
    image = processor(images=Image.open(folder / "image.png"), return_tensors="np")
    np.testing.assert_array_equal(fed["image_grid_thw"], image["image_grid_thw"])
    assert np.abs(fed["pixel_values"] - image["pixel_values"]).max() < 1e-5
    ids = fed["input_ids"].astype(np.int64)
    merge = model.config.vision_config.spatial_merge_size
    assert (ids == SPECIALS["<|image_pad|>"]).sum() == image["image_grid_thw"][0].prod() // merge**2

    tokens = genai_greedy(genai, ids.shape[1] + NEW_TOKENS, inputs=inputs)

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
    return tokens, expected[0, ids.shape[1] :].tolist()
