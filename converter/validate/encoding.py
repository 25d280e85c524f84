"""The encoder probe: one fixed batch of two (the second row padded where the graph reads a
mask) fed to each of the package's graphs and to the reference, every output compared where
the mask keeps it. Inputs are made from the graph's own input names and the model's config."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from converter.dtypes import ORT_NUMPY
from converter.package import MANIFEST
from converter.validate.metrics import Metrics, compare
from converter.validate.report import ValidationReport

BATCH, TOKENS, SAMPLES, FRAMES = 2, 12, 3200, 40
KEPT_TOKENS, KEPT_SAMPLES, KEPT_FRAMES = 8, 2400, 30  # of the second row; the rest is padding


def missing_files(package: Path) -> list[str]:
    return []


def probe(package: Path, provider: str, reference, report: ValidationReport, steps: int) -> None:
    """Run every graph of `package` and `reference` (anything with `outputs(role, feeds)`) on
    the same inputs, recording the worst figures over all outputs in `report`."""
    config = _config(package)
    renamed = reference_names(config)
    found: list[Metrics] = []
    logits: list[float] = []
    for component in json.loads((package / MANIFEST).read_text())["components"]:
        started = time.perf_counter()
        session = ort.InferenceSession(str(package / component["filename"]), providers=[provider])
        report.load_seconds = (report.load_seconds or 0.0) + time.perf_counter() - started
        feeds = probe_inputs(session, config)
        names = [o.name for o in session.get_outputs()]
        actual = dict(zip(names, session.run(None, feeds), strict=True))
        expected = reference.outputs(component["role"], feeds)
        mask = feeds.get("attention_mask")
        for name, value in actual.items():
            metrics = _compare(expected[renamed.get(name, name)], value, mask)
            found.append(metrics)
            if "logits" in name:
                logits.append(metrics.top1_agreement)
    report.record(
        Metrics(
            max_abs_diff=max(m.max_abs_diff for m in found),
            min_cosine=min(m.min_cosine for m in found),
            top1_agreement=min(logits, default=1.0),
        )
    )


def probe_inputs(session: ort.InferenceSession, config: dict) -> dict[str, np.ndarray]:
    """A fixed batch for the graph's inputs: token ids from the vocabulary (the second row
    padded), token types 0 then 1, RoCBert's shape and pronunciation ids from their
    vocabularies, global attention on the first token, LUKE's entities, boxes (x0 <= x1,
    y0 <= y1) on the 2-D position grid, pixels or samples of the graph's (or the config's)
    size, or NaFlex patches with their mask and grid shapes."""
    rng = np.random.default_rng(0)
    text = config.get("text_config") or config
    # FSMT names its source (encoder) vocabulary src_vocab_size
    vocab = text.get("src_vocab_size") or text.get("vocab_size", 100)
    pad = text.get("pad_token_id") or 0
    feeds = {}
    for item in session.get_inputs():
        dtype = ORT_NUMPY[item.type]
        if item.name == "input_ids":
            ids = rng.integers(min(3, vocab - 1), vocab, size=(BATCH, TOKENS))
            ids[1, KEPT_TOKENS:] = pad
            feeds[item.name] = ids.astype(dtype)
        elif item.name == "token_type_ids" and len(item.shape) == 3:  # TAPAS's 7 columns
            feeds[item.name] = _table_types(rng, config).astype(dtype)
        elif item.name == "token_type_ids":
            feeds[item.name] = (np.arange(TOKENS)[None].repeat(BATCH, 0) >= TOKENS // 2).astype(
                dtype
            )
        elif item.name in ("attention_mask", "padding_mask"):  # OmniASR's names its samples'
            names = _names(session)
            length, kept = TOKENS, KEPT_TOKENS
            if "input_values" in names:
                length, kept = SAMPLES, KEPT_SAMPLES
            elif "input_features" in names:  # filter-bank frames (Speech2Text)
                length, kept = FRAMES, KEPT_FRAMES
            mask = np.ones((BATCH, length), dtype)
            mask[1, kept:] = 0
            feeds[item.name] = mask
        elif item.name == "global_attention_mask":  # Longformer: the first token global
            mask = np.zeros((BATCH, TOKENS), dtype)
            mask[:, 0] = 1
            feeds[item.name] = mask
        elif item.name == "bbox":  # LayoutLM: a box per token on the config's 2-D grid
            grid = config.get("max_2d_position_embeddings", 1024)
            corners = rng.integers(0, grid, size=(BATCH, TOKENS, 2, 2))
            boxes = np.concatenate([corners.min(axis=2), corners.max(axis=2)], axis=-1)
            feeds[item.name] = boxes.astype(dtype)
        elif item.name.startswith("entity_"):  # LUKE's entities, made together
            feeds.update({} if item.name in feeds else _entities(rng, config))
        elif item.name in ("input_shape_ids", "input_pronunciation_ids"):  # RoCBert's side ids
            side = item.name.split("_")[1]
            ids = rng.integers(0, config.get(f"{side}_vocab_size", 2), size=(BATCH, TOKENS))
            ids[1, KEPT_TOKENS:] = pad
            feeds[item.name] = ids.astype(dtype)
        elif item.name == "pixel_values" and "spatial_shapes" in _names(session):
            feeds.update(_naflex_images(rng, config))
        elif item.name in ("pixel_attention_mask", "spatial_shapes"):
            continue  # made with the NaFlex pixel values
        elif item.name == "pixel_values" and len(item.shape) == 5:  # a list of images a row
            shape = (BATCH, 1, *_image_shape(item, config, first=2)[1:])
            feeds[item.name] = rng.standard_normal(shape).astype(dtype)
        elif item.name == "pixel_values":
            feeds[item.name] = rng.standard_normal(_image_shape(item, config)).astype(dtype)
        elif item.name == "input_features":  # spectrogram frames: Whisper's fixed size, or
            # FRAMES filter banks [batch, frames, features] with a mask (Speech2Text)
            shape = (BATCH, *(d if isinstance(d, int) else FRAMES for d in item.shape[1:]))
            features = rng.standard_normal(shape).astype(dtype)
            if "attention_mask" in _names(session):
                features[1, KEPT_FRAMES:] = 0
            feeds[item.name] = features
        elif item.name == "input_values":  # [batch, samples], or OmniASR's [batch, 1, samples]
            values = rng.standard_normal((BATCH, SAMPLES)).astype(dtype)
            values[1, KEPT_SAMPLES:] = 0
            if len(item.shape) == 3:
                values = values[:, None]
            feeds[item.name] = values
        else:
            raise ValueError(f"the encoder probe cannot make input {item.name!r}")
    if "input_ids" in feeds and feeds.get("pixel_values", np.empty(0)).ndim == 5:
        feeds.update(_image_tokens(feeds, config))
    return feeds


def _entities(rng, config: dict) -> dict[str, np.ndarray]:
    """LUKE's entity inputs: two entities a row from the entity vocabulary, mentioning one and
    two of the row's kept words (-1 pads a mention), token type 0."""
    ids = rng.integers(1, config.get("entity_vocab_size", 2), size=(BATCH, 2))
    positions = np.array([[[1, -1], [KEPT_TOKENS - 3, KEPT_TOKENS - 2]]] * BATCH)
    ones = np.ones((BATCH, 2), np.int64)
    return {
        "entity_ids": ids,
        "entity_attention_mask": ones,
        "entity_token_type_ids": ones * 0,
        "entity_position_ids": positions,
    }


def _image_tokens(feeds: dict[str, np.ndarray], config: dict) -> dict[str, np.ndarray]:
    """Each row's image tokens (as many as the connector makes of an image: UltraVBERT's
    pixel shuffle) inserted after its first token."""
    vision, image = config["vision_config"], config["image_token_id"]
    side = vision["image_size"] // vision["patch_size"] // config["pixel_shuffle_factor"]
    ids, mask = feeds["input_ids"], feeds["attention_mask"]
    ids = np.where(ids == image, 4 if image == 3 else 3, ids)  # no stray image tokens
    tokens = np.full((BATCH, side * side), image, ids.dtype)
    return {
        "input_ids": np.concatenate([ids[:, :1], tokens, ids[:, 1:]], axis=1),
        "attention_mask": np.concatenate(
            [mask[:, :1], np.ones_like(tokens, mask.dtype), mask[:, 1:]], axis=1
        ),
    }


def _table_types(rng: np.random.Generator, config: dict) -> np.ndarray:
    """TAPAS's token types [batch, tokens, columns]: a question of 4 tokens, then cells of 2
    tokens (column and row ids from 1), the other columns random in their tables; the second
    row's padding all zeros."""
    sizes = config.get("type_vocab_sizes", [3, 256, 256, 2, 256, 256, 10])
    types = rng.integers(0, np.array(sizes), size=(BATCH, TOKENS, len(sizes)))
    cells = np.arange(TOKENS) // 2 - 1  # tokens 0-3: the question (cell -1 and 0)
    table = np.arange(TOKENS) >= 4
    types[:, :, 0] = table
    types[:, :, 1] = np.where(table, cells % 2 + 1, 0)
    types[:, :, 2] = np.where(table, cells // 2, 0)
    types[1, KEPT_TOKENS:] = 0
    return types


def reference_names(config: dict) -> dict[str, str]:
    """The graph outputs transformers names otherwise, as the family declares them (PP-LCNet
    returns its logits as last_hidden_state)."""
    from converter.registry import families

    family = families().get(config.get("model_type"))
    return getattr(family.model_class, "reference_names", {}) if family else {}


def _names(session) -> set[str]:
    return {i.name for i in session.get_inputs()}


def _image_shape(item, config: dict, first: int = 1) -> tuple[int, ...]:
    """[batch, channels, height, width]; `first`: the input's axis of channels."""
    vision = config.get("vision_config") or config
    size = vision.get("image_size", 224)
    height, width = (size, size) if isinstance(size, int) else size
    fixed = [d if isinstance(d, int) else None for d in item.shape[first:]]
    channels = fixed[0] or vision.get("num_channels", 3)
    return (BATCH, channels, fixed[1] or height, fixed[2] or width)


def _naflex_images(rng: np.random.Generator, config: dict) -> dict[str, np.ndarray]:
    """Two images cut in patches (SigLIP 2's NaFlex): the position grid's full square, and half
    its rows, padded to the same patch count."""
    vision = config.get("vision_config") or config
    patches, patch = vision.get("num_patches", 256), vision.get("patch_size", 16)
    side = max(1, int(patches**0.5))
    shapes = np.array([[side, side], [max(1, side // 2), side]], np.int64)
    mask = np.arange(patches)[None, :] < shapes.prod(1)[:, None]
    width = vision.get("num_channels", 3) * patch * patch
    pixels = rng.standard_normal((BATCH, patches, width)).astype(np.float32) * mask[..., None]
    return {
        "pixel_values": pixels,
        "pixel_attention_mask": mask.astype(np.int32),
        "spatial_shapes": shapes,
    }


def _compare(expected: np.ndarray, actual: np.ndarray, mask: np.ndarray | None) -> Metrics:
    """Outputs over tokens are compared on the tokens the mask keeps only."""
    expected, actual = expected.astype(np.float32), actual.astype(np.float32)
    over_tokens = mask is not None and actual.shape[:2] == mask.shape
    if over_tokens and actual.ndim == 3:
        return compare(expected, actual, mask)
    if over_tokens:  # [batch, tokens]: compared per row, padding zeroed on both sides
        expected, actual = expected * mask, actual * mask
    if actual.ndim == 1:
        expected, actual = expected[None], actual[None]
    if actual.ndim == 4:  # maps [batch, channels, height, width]: each image's as one vector
        expected, actual = expected.reshape(len(expected), -1), actual.reshape(len(actual), -1)
    return compare(expected, actual)


def _config(package: Path) -> dict:
    path = package / "config.json"
    return json.loads(path.read_text()) if path.is_file() else {}
