"""transformers on the same tiny random weights: the reference every family is held to."""

from __future__ import annotations

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
    model.eval()
    model.save_pretrained(folder)
    return model
