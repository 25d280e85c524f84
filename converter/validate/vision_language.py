"""The image-text-to-text probe: one random image of the size the vision graph takes, a prompt
holding its image tokens between text tokens, the logits of the prompt and of greedy steps
teacher-forced on the reference's tokens, and greedy decoding free-running; the vision graph's
image features and the embedding graph's inputs_embeds are compared on their own too."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from converter.validate.metrics import compare, leading_matches
from converter.validate.report import ValidationReport
from converter.validate.text_generation import last_prefill_position
from converter.validate.vlm_runtime import OnnxVisionLanguage

BEFORE, AFTER = 3, 4  # text tokens around the image's


def missing_files(package: Path) -> list[str]:
    """The graphs carry everything onnxruntime needs; a package onnxruntime-genai runs also
    needs its tokenizer (converter/validate/text_generation.py says so for its own)."""
    return []


def probe_image(session, config: dict) -> dict[str, np.ndarray]:
    """One random image the vision graph takes: of its fixed dims (one tile, unpadded, where it
    reads tiles; 4 x 4 patches where they are padded images of any size), (flattened patches,
    or an image of any size) a grid of 2 x 2 merge blocks,
    or (AnyRes crops) of the first pinpoint's size, which that grid fits exactly."""
    rng = np.random.default_rng(0)
    inputs = {meta.name: meta for meta in session.get_inputs()}
    if "image_sizes" in inputs and len(inputs["pixel_values"].shape) == 5:
        height, width = config["image_grid_pinpoints"][0]
        channels, crop = inputs["pixel_values"].shape[2:4]
        crops = 1 + height * width // crop**2
        image = {
            "pixel_values": rng.standard_normal((1, crops, channels, crop, crop)).astype(
                np.float32
            ),
            "image_sizes": np.array([[height, width]], dtype=np.int64),
        }
        if "batch_num_images" in inputs:
            image["batch_num_images"] = np.array([1], dtype=np.int64)
        return image
    if "image_sizes" in inputs:
        side = 2 * config["vision_config"]["patch_size"] * config["spatial_merge_size"]
        channels = inputs["pixel_values"].shape[1]
        return {
            "pixel_values": rng.standard_normal((1, channels, side, side)).astype(np.float32),
            "image_sizes": np.array([[side, side]], dtype=np.int64),
        }
    if "image_grid_thw" not in inputs:
        dims = [1 if isinstance(d, str) or d is None else d for d in inputs["pixel_values"].shape]
        if len(dims) == 5 and isinstance(inputs["pixel_values"].shape[-1], str):
            # padded images of any size (Idefics 2): a square of 4 x 4 patches
            dims[-2:] = [4 * config["vision_config"]["patch_size"]] * 2
        image = {"pixel_values": rng.standard_normal(dims).astype(np.float32)}
        if "pixel_attention_mask" in inputs:
            image["pixel_attention_mask"] = np.ones(dims[:2] + dims[3:], dtype=np.int64)
        return image
    merged = "image_merge_sizes" in inputs  # VideoLLaMA 3: an image at its merge size, 1
    side = 2 if merged else 2 * config["vision_config"]["spatial_merge_size"]
    width = inputs["pixel_values"].shape[-1]
    image = {
        "pixel_values": rng.standard_normal((side * side, width)).astype(np.float32),
        "image_grid_thw": np.array([[1, side, side]], dtype=np.int64),
    }
    if merged:
        image["image_merge_sizes"] = np.array([1], dtype=np.int64)
    return image


def probe(package: Path, provider: str, reference, report: ValidationReport, steps: int) -> None:
    candidate = OnnxVisionLanguage(package, provider)
    config = json.loads((package / "config.json").read_text())
    image = probe_image(candidate.vision, config)
    tokens = candidate.image_features(image).shape[0]
    image_token = config.get("image_token_id", config.get("image_token_index"))
    text_config = config.get("text_config") or {}
    vocab = text_config.get("vocab_size") or candidate.decoder.get_outputs()[0].shape[-1]
    text = np.random.default_rng(0).integers(0, min(vocab, image_token), size=(1, BEFORE + AFTER))
    image_ids = np.full((1, tokens), image_token)
    prompt = np.concatenate([text[:, :BEFORE], image_ids, text[:, BEFORE:]], axis=1)
    report.record_component(
        "image_features", compare(reference.image_features(image), candidate.image_features(image))
    )
    report.record_component(
        "inputs_embeds",
        compare(reference.inputs_embeds(image, prompt), candidate.inputs_embeds(image, prompt)),
    )
    expected_tokens, _ = reference.greedy(image, prompt, steps)
    forced = [np.array([[t]], dtype=np.int64) for t in expected_tokens[:-1]]
    expected = last_prefill_position(package, reference.run(image, prompt, forced))
    actual = candidate.run(image, prompt, forced)
    report.record(compare(np.concatenate(expected, axis=1), np.concatenate(actual, axis=1)))
    tokens, report.tokens_per_second = candidate.greedy(image, prompt, steps)
    report.greedy_match = leading_matches(tokens, expected_tokens) / steps
    report.load_seconds = candidate.load_seconds
