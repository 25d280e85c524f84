"""transformers encoders on tiny random weights, and the inputs both sides are fed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers

from tests.parity.encoder_cases import EncoderCase

RNG = np.random.default_rng(0)
BATCH, LENGTH = 2, 9
# the second row is padded after 5 tokens
TEXT_MASK = np.array([[1] * LENGTH, [1] * 5 + [0] * (LENGTH - 5)])


def make_encoder(case_id: str, case: EncoderCase, head: str, folder: Path):
    """A random `head` model for `case`, saved to `folder` (weights noised so biases and norms
    are not trivial)."""
    config = transformers.AutoConfig.for_model(**case.config)
    for key, value in case.overrides.items():
        setattr(config, key, value)
    config._attn_implementation = "eager"
    torch.manual_seed(sum(map(ord, case_id + head)))
    model = getattr(transformers, head)(config)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.05)
    model.eval()
    model.save_pretrained(folder)
    return model


def text_inputs(config: dict) -> dict[str, np.ndarray]:
    """A batch of two, the second row padded with the pad token; token types 0 then 1. Where
    the config names a mask token, each row holds one (ESM's token dropout counts them)."""
    vocab, pad = config["vocab_size"], config.get("pad_token_id", 0)
    ids = RNG.integers(3, vocab, size=(BATCH, LENGTH))
    if config.get("mask_token_id") is not None:
        ids[:, 2] = config["mask_token_id"]
    ids = np.where(TEXT_MASK == 1, ids, pad)
    types = np.zeros_like(ids)
    types[:, 4:] = 1
    return {"input_ids": ids, "attention_mask": TEXT_MASK, "token_type_ids": types}


def layout_inputs(config: dict) -> dict[str, np.ndarray]:
    """Text inputs and a box per token, (x0, y0, x1, y1) with x0 <= x1 and y0 <= y1 on the
    config's grid."""
    grid = config.get("max_2d_position_embeddings", 1024)
    corners = RNG.integers(0, grid, size=(BATCH, LENGTH, 2, 2))
    low, high = corners.min(axis=2), corners.max(axis=2)
    return {**text_inputs(config), "bbox": np.concatenate([low, high], axis=-1)}


INPUTS = {"text": text_inputs, "layout": layout_inputs}


def reference_outputs(model, feeds: dict[str, np.ndarray]) -> object:
    with torch.no_grad():
        return model(**{name: torch.from_numpy(value) for name, value in feeds.items()})
