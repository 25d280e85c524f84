"""transformers on the same tiny random weights: the reference every family is held to."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers

from tests.parity.families import CASES


def make_checkpoint(case: str, folder: Path, **overrides):
    """Save a random model for `case`, with config keys `overrides` on top (noised so biases
    and norms are not trivial)."""
    model_type = case.split("-")[0]
    config = transformers.AutoConfig.for_model(model_type, **{**CASES[case], **overrides})
    config._attn_implementation = "eager"
    torch.manual_seed(sum(map(ord, case)))
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.05)
    model.eval()
    model.save_pretrained(folder)
    return model


def generate_steps(model, ids: np.ndarray, mask: np.ndarray, steps: list[np.ndarray]):
    """Prefill then decode `steps` with the model's own KV cache; logits per call."""
    position = np.clip(mask.cumsum(-1) - 1, 0, None)
    outputs = []
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(ids),
            attention_mask=torch.tensor(mask),
            position_ids=torch.tensor(position),
            use_cache=True,
        )
        outputs.append(out.logits.numpy())
        cache = out.past_key_values
        for token in steps:
            mask = np.concatenate([mask, np.ones((mask.shape[0], 1), mask.dtype)], axis=1)
            position = position[:, -1:] + 1
            out = model(
                input_ids=torch.tensor(token),
                attention_mask=torch.tensor(mask),
                position_ids=torch.tensor(position),
                cache=cache,
                use_cache=True,
            )
            outputs.append(out.logits.numpy())
            cache = out.past_key_values
    return outputs
