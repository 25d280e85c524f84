"""transformers encoders on tiny random weights, and the inputs both sides are fed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import transformers

from converter.validate.reference import model_outputs
from tests.parity.encoder_cases import EncoderCase

RNG = np.random.default_rng(0)
BATCH, LENGTH = 2, 9
# the second row is padded after 5 tokens
TEXT_MASK = np.array([[1] * LENGTH, [1] * 5 + [0] * (LENGTH - 5)])


def make_encoder(case_id: str, case: EncoderCase, head: str, folder: Path):
    """A random `head` model for `case`, saved to `folder` (weights noised so biases and norms
    are not trivial; BatchNorm statistics measured on other random inputs)."""
    config = transformers.AutoConfig.for_model(**case.config)
    for key, value in case.overrides.items():
        setattr(config, key, value)
    config._attn_implementation = "eager"
    torch.manual_seed(sum(map(ord, case_id + head)))
    model = getattr(transformers, head)(config)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.05)
    calibrate_batch_norms(model, case)
    model.eval()
    model.save_pretrained(folder)
    return model


def calibrate_batch_norms(model, case: EncoderCase) -> None:
    """Running statistics from one batch of random inputs, so deep convolutional stacks keep
    their activations in range (the initial 0 / 1 let them die out or blow up, and then
    float32 rounding, amplified layer by layer, is all a comparison sees). A case that does not
    `calibrate` keeps transformers' initial statistics, noised."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    if not case.calibrate:
        for norm in norms:
            norm.running_mean.normal_(0.0, 0.1)
            norm.running_var.uniform_(0.5, 1.5)
        return
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average: after one batch, that batch's statistics
    inputs = {name: torch.from_numpy(value) for name, value in case_inputs(case).items()}
    model.train()
    with torch.no_grad():
        model(**inputs)


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


def image_inputs(config: dict) -> dict[str, np.ndarray]:
    """A batch of two random images at the configured size (no padding: every patch is real)."""
    full = transformers.AutoConfig.for_model(**config)
    size = full.image_size
    height, width = size if isinstance(size, list | tuple) else (size, size)
    pixels = RNG.standard_normal((BATCH, full.num_channels, height, width))
    return {"pixel_values": pixels.astype(np.float32)}


def layout_inputs(config: dict) -> dict[str, np.ndarray]:
    """Text inputs and a box per token, (x0, y0, x1, y1) with x0 <= x1 and y0 <= y1 on the
    config's grid."""
    grid = config.get("max_2d_position_embeddings", 1024)
    corners = RNG.integers(0, grid, size=(BATCH, LENGTH, 2, 2))
    low, high = corners.min(axis=2), corners.max(axis=2)
    return {**text_inputs(config), "bbox": np.concatenate([low, high], axis=-1)}


def table_inputs(config: dict) -> dict[str, np.ndarray]:
    """Text inputs and TAPAS's token types [batch, sequence, 7]: three question tokens, then
    table cells of two tokens or more (column and row ids repeating, so positions restart in
    every cell), the other columns random in their tables; padding all zeros."""
    feeds, sizes = text_inputs(config), config["type_vocab_sizes"]
    types = RNG.integers(0, np.array(sizes), size=(BATCH, LENGTH, len(sizes)))
    types[:, :, 0] = [0, 0, 0, 1, 1, 1, 1, 1, 1]  # segment: question, then table
    types[:, :, 1] = [0, 0, 0, 1, 1, 2, 2, 1, 1]  # column
    types[:, :, 2] = [0, 0, 0, 0, 0, 0, 0, 1, 1]  # row
    feeds["token_type_ids"] = types * TEXT_MASK[..., None]
    return feeds


def shape_pronunciation_inputs(config: dict) -> dict[str, np.ndarray]:
    """Text inputs and RoCBert's shape and pronunciation ids per token (the pad id where the
    row is padded)."""
    feeds, pad = text_inputs(config), config.get("pad_token_id", 0)
    for side in ("shape", "pronunciation"):
        ids = RNG.integers(0, config[f"{side}_vocab_size"], size=(BATCH, LENGTH))
        feeds[f"input_{side}_ids"] = np.where(TEXT_MASK == 1, ids, pad)
    return feeds


def global_text_inputs(config: dict) -> dict[str, np.ndarray]:
    """Text inputs with global tokens (Longformer) in the first row only: the first token by
    global_attention_mask, the seventh by an attention_mask value of 2. The padded second row
    has none, so its last padded tokens see no key at all through a short window."""
    feeds = text_inputs(config)
    globals_ = np.zeros_like(feeds["input_ids"])
    globals_[0, 0] = 1
    mask = feeds["attention_mask"].copy()
    mask[0, 6] = 2
    return {**feeds, "attention_mask": mask, "global_attention_mask": globals_}


def entity_text_inputs(config: dict) -> dict[str, np.ndarray]:
    """Text inputs and three entities per row (LUKE): each mentions one or two of the row's
    kept words (-1 padding the mention), types 0 then 1; the second row's last entity is
    padding (id 0, no mention, masked)."""
    feeds, entities = text_inputs(config), 3
    ids = RNG.integers(1, config["entity_vocab_size"], size=(BATCH, entities))
    mask = np.array([[1, 1, 1], [1, 1, 0]])
    starts = np.array([[1, 3, 6], [0, 2, 0]])
    second = np.array([[2, -1, 7], [-1, 3, -1]])
    positions = np.where(mask[..., None] == 1, np.stack([starts, second], axis=-1), -1)
    return {
        **feeds,
        "entity_ids": ids * mask,
        "entity_attention_mask": mask,
        "entity_token_type_ids": np.array([[0, 1, 1], [0, 1, 0]]),
        "entity_position_ids": positions,
    }


# waveforms: 400 samples, the second row padded with zeros after 250 (several strides of a
# case's feature encoder)
SAMPLES, AUDIO_KEPT = 400, 250


def audio_inputs(config: dict) -> dict[str, np.ndarray]:
    """A batch of two waveforms, the second right-padded with zeros, and their sample mask."""
    mask = (np.arange(SAMPLES)[None, :] < np.array([[SAMPLES], [AUDIO_KEPT]])).astype(np.int64)
    values = (RNG.standard_normal((BATCH, SAMPLES)) * mask).astype(np.float32)
    return {"input_values": values, "attention_mask": mask}


def channel_audio_inputs(config: dict) -> dict[str, np.ndarray]:
    """The waveforms of `audio_inputs` as OmniASR's processor gives them: [batch, 1, samples],
    with the sample mask as `padding_mask`."""
    feeds = audio_inputs(config)
    return {"input_values": feeds["input_values"][:, None], "padding_mask": feeds["attention_mask"]}


def spectrogram_inputs(config: dict) -> dict[str, np.ndarray]:
    """A batch of two log-mel spectrograms of the config's fixed size."""
    shape = (BATCH, config["max_length"], config["num_mel_bins"])
    return {"input_values": RNG.standard_normal(shape).astype(np.float32)}


# mel features: 64 frames, the second row padded with zeros (as the processor pads) after 45
MEL_FRAMES, MEL_KEPT = 64, 45
# features per frame, per mel bin, where the processor stacks more than the bins
STACKED_MEL_BINS = {"granite_speech5_ctc": 4}


def mel_inputs(config: dict) -> dict[str, np.ndarray]:
    """A batch of two mel-feature sequences [batch, frames, bins] (the bins of the encoder's
    config; wav2vec2-BERT's stacked ones), the second right-padded with zeros, and their frame
    mask."""
    bins = config.get("feature_projection_input_dim") or config["encoder_config"]["num_mel_bins"]
    bins *= STACKED_MEL_BINS.get(config["model_type"], 1)
    mask = (np.arange(MEL_FRAMES)[None, :] < np.array([[MEL_FRAMES], [MEL_KEPT]])).astype(np.int64)
    features = RNG.standard_normal((BATCH, MEL_FRAMES, bins)) * mask[:, :, None]
    return {"input_features": features.astype(np.float32), "attention_mask": mask}


def kept_positions(reference, inputs: str, feeds: dict[str, np.ndarray]) -> np.ndarray | None:
    """[batch, positions] 1 where outputs with a position axis are compared: the tokens the
    text mask keeps; the audio frames the model's own conv lengths keep (all frames when the
    graph takes no mask, as transformers then computes every frame too)."""
    # image outputs' batch (IMAGES) never matches the text mask
    if inputs in (
        "text",
        "layout",
        "shape+pronunciation",
        "text+global",
        "text+entities",
        "text+image",
        "text+tiles",
        "table",
    ):
        return TEXT_MASK
    mask = feeds.get("attention_mask", feeds.get("padding_mask"))
    if mask is None:
        return None
    samples = torch.from_numpy(mask.sum(-1))
    # OmniASR names the feature encoder's lengths its own way
    conv_lengths = getattr(reference, "_get_feat_extract_output_lengths", None)
    lengths = (conv_lengths or reference._get_subsampling_output_length)(samples)
    frames = int(lengths.max())
    return (np.arange(frames)[None, :] < lengths.numpy()[:, None]).astype(np.int64)


IMAGES = 3  # a batch of its own size, so the text and image batch axes cannot be confused
# NaFlex images: rows and columns of patches (more and fewer than the position grid has), each
# padded to the processor's patch count
NAFLEX_SHAPES, NAFLEX_PATCHES = np.array([[4, 5], [2, 3], [5, 3]]), 20


def text_image_inputs(config: dict, image_size: int | None = None) -> dict[str, np.ndarray]:
    """The two texts of `text_inputs`, each ending at the EOS token where the text config has
    one (and holding it nowhere else), and three random images: [batch, channels, size, size],
    or NaFlex patches with their mask and grid shapes where the vision config has
    `num_patches`; `image_size`: the side where not the vision config's."""
    text, vision = config["text_config"], config["vision_config"]
    feeds = text_inputs(text)
    eos = text.get("eos_token_id")
    if eos is not None:
        ids = np.where(feeds["input_ids"] == eos, 3, feeds["input_ids"])
        ids[np.arange(BATCH), TEXT_MASK.sum(1) - 1] = eos
        feeds["input_ids"] = ids
    channels = vision.get("num_channels", 3)
    if "num_patches" not in vision:
        size = image_size or vision["image_size"]
        feeds["pixel_values"] = RNG.standard_normal((IMAGES, channels, size, size), np.float32)
        return feeds
    patch = vision["patch_size"]
    mask = np.arange(NAFLEX_PATCHES)[None, :] < NAFLEX_SHAPES.prod(1)[:, None]
    pixels = RNG.standard_normal((IMAGES, NAFLEX_PATCHES, channels * patch * patch), np.float32)
    feeds["pixel_values"] = pixels * mask[..., None]  # padding patches are zeros
    feeds["pixel_attention_mask"] = mask.astype(np.int32)
    feeds["spatial_shapes"] = NAFLEX_SHAPES
    return feeds


def text_tile_inputs(config: dict) -> dict[str, np.ndarray]:
    """The two texts of `text_inputs`, each holding one image's tokens (as many image tokens as
    the connector makes of an image) among its kept ones, and pixel_values [batch, 2, channels,
    size, size]: each row's image, then an all-zero one padding the row's list."""
    text, vision, image = config["text_config"], config["vision_config"], config["image_token_id"]
    feeds = text_inputs(text)
    side = vision["image_size"] // vision["patch_size"] // config["pixel_shuffle_factor"]
    ids = np.where(feeds["input_ids"] == image, 3, feeds["input_ids"])
    ids[:, 1 : 1 + side * side] = image
    feeds["input_ids"] = ids
    size = vision["image_size"]
    pixels = RNG.standard_normal((BATCH, 2, vision.get("num_channels", 3), size, size))
    pixels[:, 1] = 0.0
    feeds["pixel_values"] = pixels.astype(np.float32)
    return feeds


INPUTS = {
    "text": text_inputs,
    "image": image_inputs,
    "layout": layout_inputs,
    "table": table_inputs,
    "shape+pronunciation": shape_pronunciation_inputs,
    "text+global": global_text_inputs,
    "text+entities": entity_text_inputs,
    "audio": audio_inputs,
    "audio+channel": channel_audio_inputs,
    "spectrogram": spectrogram_inputs,
    "mel": mel_inputs,
    "text+image": text_image_inputs,
    "text+tiles": text_tile_inputs,
}


def reference_outputs(model, feeds: dict[str, np.ndarray], role: str = "encoder") -> object:
    """What transformers gives for the inputs of a component of `role` (converter/validate's
    reading: a two-tower model's text and vision graphs give its text or image features)."""
    tensors = {name: torch.from_numpy(value) for name, value in feeds.items()}
    with torch.no_grad():
        return SimpleNamespace(**model_outputs(model, role, tensors))


def case_inputs(case: EncoderCase) -> dict[str, np.ndarray]:
    """The inputs `case` feeds (images of its own size where it names one)."""
    if case.image_size is not None:
        return INPUTS[case.inputs](case.config, case.image_size)
    return INPUTS[case.inputs](case.config)
