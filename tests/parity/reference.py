"""transformers on the same tiny random weights: the reference every family is held to."""

from __future__ import annotations

import json
from pathlib import Path

import torch
import transformers

from converter.registry import family_for
from tests.parity.cases import CASES, model_type_of


def make_checkpoint(case: str, folder: Path, **overrides):
    """Save a random model for `case`, with config keys `overrides` on top (noised so biases
    and norms are not trivial)."""
    model_type = model_type_of(case)
    config = transformers.AutoConfig.for_model(model_type, **{**CASES[case], **overrides})
    attention = family_for(model_type).reference_attention
    config._attn_implementation = attention
    torch.manual_seed(sum(map(ord, case)))
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=attention)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.05)
        saved = model.state_dict()
        for name, buffer in model.named_buffers():  # stored ones, e.g. Gemma 4's layer scalars
            if name in saved and buffer.is_floating_point():
                buffer.add_(torch.randn_like(buffer) * 0.05)
    model.eval()
    model.save_pretrained(folder)
    _declare_model_type(folder / "config.json", model_type)
    return model


def _declare_model_type(path: Path, model_type: str) -> None:
    """A type transformers reads with another's configuration class (gpt-sw3 with GPT-2's) is
    saved under that other's name: declare the case's own, so its registration is what runs."""
    config = json.loads(path.read_text())
    if config["model_type"] != model_type:
        path.write_text(json.dumps({**config, "model_type": model_type}, indent=2))
