"""transformers vision-language models on tiny random weights, and what both sides are fed: a
batch of two prompts, each holding one image's placeholder tokens between text tokens."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers

from tests.parity.vlm_cases import VlmCase

RNG = np.random.default_rng(0)
BATCH, BEFORE, AFTER, STEPS = 2, 3, 4, 3


def make_vlm(case_id: str, case: VlmCase, folder: Path):
    """A random `case.model_class` model for `case`, saved to `folder` (the saved tensors
    noised so biases and norms are not trivial; rotary tables, which are not saved, are not)."""
    config = transformers.AutoConfig.for_model(**case.config)
    for key, value in case.overrides.items():
        setattr(config, key, value)
    config._attn_implementation = "eager"
    torch.manual_seed(sum(map(ord, case_id)))
    model = getattr(transformers, case.model_class).from_config(config)
    with torch.no_grad():
        for tensor in model.state_dict().values():
            if tensor.is_floating_point():
                tensor.add_(torch.randn_like(tensor) * 0.05)
    model.eval()
    model.save_pretrained(folder)
    return model


def pixel_images(model) -> dict[str, np.ndarray]:
    """One fixed random image per prompt, of the tower's configured size."""
    vision = model.config.vision_config
    shape = (BATCH, vision.num_channels, vision.image_size, vision.image_size)
    return {"pixel_values": RNG.standard_normal(shape).astype(np.float32)}


def prompt(model, image_tokens: int) -> np.ndarray:
    """[batch, sequence] ids: text, the image's placeholders, text (never the image token)."""
    config = model.config
    vocab = config.text_config.vocab_size
    text = RNG.integers(3, vocab, size=(BATCH, BEFORE + AFTER))
    text = np.where(text == config.image_token_id, 3, text)
    image = np.full((BATCH, image_tokens), config.image_token_id)
    return np.concatenate([text[:, :BEFORE], image, text[:, BEFORE:]], axis=1)


def step_tokens(model) -> list[np.ndarray]:
    vocab = model.config.text_config.vocab_size
    return [RNG.integers(3, 200, size=(BATCH, 1)) % vocab for _ in range(STEPS)]


def reference(model, image: dict[str, np.ndarray], ids: np.ndarray, steps: list[np.ndarray]):
    """(image features [tokens, hidden], the prompt's inputs_embeds, the logits of the prompt
    and each step token, teacher-forced in one pass)."""
    pixels = {k: torch.from_numpy(v) for k, v in image.items()}
    with torch.no_grad():
        features = torch.cat(list(model.get_image_features(**pixels).pooler_output))
        tokens = torch.from_numpy(ids)
        embeds = model.get_input_embeddings()(tokens)
        mask = (tokens == model.config.image_token_id)[..., None].expand_as(embeds)
        embeds = embeds.masked_scatter(mask, features)
        whole = torch.from_numpy(np.concatenate([ids, *steps], axis=1))
        logits = model(input_ids=whole, **pixels).logits.numpy()
    length = ids.shape[1]
    per_call = [
        logits[:, :length],
        *(logits[:, length + i : length + i + 1] for i in range(len(steps))),
    ]
    return features.numpy(), embeds.numpy(), per_call
