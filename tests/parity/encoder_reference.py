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
        for module in model.modules():  # BatchNorm: scales near 1, statistics off 0 and 1
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.weight.normal_(1.0, 0.2)
                module.running_mean.normal_(0.0, 0.1)
                module.running_var.uniform_(0.5, 1.5)
    model.eval()
    model.save_pretrained(folder)
    return model


def text_inputs(config: dict) -> dict[str, np.ndarray]:
    """A batch of two, the second row padded with the pad token; token types 0 then 1."""
    vocab, pad = config["vocab_size"], config.get("pad_token_id", 0)
    ids = RNG.integers(3, vocab, size=(BATCH, LENGTH))
    ids = np.where(TEXT_MASK == 1, ids, pad)
    types = np.zeros_like(ids)
    types[:, 4:] = 1
    return {"input_ids": ids, "attention_mask": TEXT_MASK, "token_type_ids": types}


def image_inputs(config: dict) -> dict[str, np.ndarray]:
    """A batch of two random images at the configured size (no padding: every patch is real)."""
    full = transformers.AutoConfig.for_model(**config)
    size = full.image_size
    height, width = size if isinstance(size, list | tuple) else (size, size)
    pixels = RNG.standard_normal((BATCH, full.num_channels, height, width))
    return {"pixel_values": pixels.astype(np.float32)}


INPUTS = {"text": text_inputs, "image": image_inputs}


def reference_outputs(model, feeds: dict[str, np.ndarray]) -> object:
    with torch.no_grad():
        return model(**{name: torch.from_numpy(value) for name, value in feeds.items()})
