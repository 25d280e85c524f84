"""transformers vision-language models on tiny random weights, and what both sides are fed:
images in a family's layout and prompts holding their image tokens between text tokens."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import torch
import transformers

from tests.parity.vlm_cases import VlmCase

BEFORE, AFTER, STEPS = 3, 4, 3
GRIDS = [(1, 8, 8), (1, 4, 6)]  # (frames, rows, columns) of patches: two Qwen-VL images
# (height, width) in pixels of two Pixtral images: the second neither a whole number of
# patches nor of merge blocks high, and narrower than the first
SIZES = [(32, 24), (22, 32)]
# (height, width) of three LLaVA-NeXT images, in crops: a wide one on a grid wider still (padded
# left and right: columns cut), a tall one on a grid taller still (rows cut), a small square
CROP_SIZES = [(1.1, 2.5), (2.5, 1.1), (0.9, 0.9)]
# their batch_num_images where a family reads it (LLaVA-OneVision): the first alone in its
# prompt (tiled), the other two together (base crops only); only the tiling reads it, so the
# one prompt of the case may hold all three
PROMPT_IMAGES = [1, 2]


def make_vlm(case_id: str, case: VlmCase, folder: Path):
    """A random `case.model_class` model for `case`, saved to `folder` (the saved tensors
    noised so biases and norms are not trivial; rotary tables, which are not saved, are not)."""
    config = transformers.AutoConfig.for_model(**case.config)
    for key, value in case.overrides.items():
        setattr(config, key, value)
    config._attn_implementation = "eager"
    torch.manual_seed(sum(map(ord, case_id)))
    model_class = getattr(transformers, case.model_class)
    # an Auto class builds from a config; a model class (ShieldGemma 2's classifier) is called
    model = getattr(model_class, "from_config", model_class)(config)
    with torch.no_grad():
        for tensor in model.state_dict().values():
            if tensor.is_floating_point():
                tensor.add_(torch.randn_like(tensor) * 0.05)
    model.eval()
    model.save_pretrained(folder)
    return model


def case_rng(case_id: str) -> np.random.Generator:
    """The random source of one case's inputs: its own, so adding a case changes no other's."""
    return np.random.default_rng(sum(map(ord, case_id)))


def _text(model, count: int, rng: np.random.Generator) -> np.ndarray:
    """Random text ids below the image token (never a special token of the image)."""
    config = model.config
    return rng.integers(3, min(config.text_config.vocab_size, config.image_token_id), size=count)


def image_model(model):
    """What has get_image_features (DeepSeek-VL's generation class leaves it to its inner
    model)."""
    return model if hasattr(model, "get_image_features") else model.model


def image_features(model, **pixels) -> torch.Tensor:
    """The projected features of each image."""
    return image_model(model).get_image_features(**pixels).pooler_output


def pixel_inputs(
    model, rng: np.random.Generator, per_prompt: int = 1
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Fixed random images of the tower's size, `per_prompt` in each prompt of a batch of two
    (text between them)."""
    vision = model.config.vision_config
    side = vision.image_size  # one int, or (height, width) (InternVL)
    sides = side if isinstance(side, list | tuple) else (side, side)
    shape = (2 * per_prompt, vision.num_channels, *sides)
    image = {"pixel_values": rng.standard_normal(shape).astype(np.float32)}
    with torch.no_grad():
        tokens = len(
            image_features(model, pixel_values=torch.from_numpy(image["pixel_values"][:1]))[0]
        )
    # Ovis2's visual indicator tokens (embedded by its visual table) around each image
    indicators = getattr(model.config, "visual_indicator_token_ids", None)
    opening, closing = ([[indicators[0]]], [[indicators[-1]]]) if indicators else ([], [])
    rows = []
    for _ in range(2):
        row = [_text(model, BEFORE, rng)]
        for i in range(per_prompt):
            row += [*opening, [model.config.image_token_id] * tokens, *closing]
            row += [_text(model, AFTER if i == per_prompt - 1 else 2, rng)]
        rows.append(np.concatenate(row))
    return image, np.stack(rows)


def patch_inputs(model, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Two images of different grids as the Qwen-VL processor flattens them, in one prompt,
    each between its vision (GLM-4V: image; HunYuanVL: im) start and end tokens, with as many
    image tokens as the model gives it features."""
    config, vision = model.config, model.config.vision_config
    start, end = (
        getattr(config, f"vision_{which}_token_id", None)
        or getattr(config, f"image_{which}_token_id", None)
        or getattr(config, f"im_{which}_id")
        for which in ("start", "end")
    )
    channels = getattr(vision, "in_channels", None) or vision.num_channels
    width = channels * vision.temporal_patch_size * vision.patch_size**2
    patches = sum(t * h * w for t, h, w in GRIDS)
    image = {
        "pixel_values": rng.standard_normal((patches, width)).astype(np.float32),
        "image_grid_thw": np.array(GRIDS, dtype=np.int64),
    }
    with torch.no_grad():
        found = image_features(model, **{k: torch.from_numpy(v) for k, v in image.items()})
    ids = list(_text(model, BEFORE, rng))
    for features in found:
        ids += [start, *[config.image_token_id] * len(features), end, *_text(model, 2, rng)]
    return image, np.array([ids + list(_text(model, AFTER, rng))])


# (frames, rows, columns) of patches and merge block side of three VideoLLaMA 3 images: an
# image as its processor makes them (merge 1), frames of video (merge 2), an odd merge (3)
MERGED_GRIDS = [((1, 4, 6), 1), ((2, 4, 4), 2), ((1, 3, 6), 3)]


def merged_patch_inputs(
    model, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Three images of different grids and merge sizes, flattened into patches, in one
    prompt."""
    config, vision = model.config, model.config.vision_config
    width = vision.num_channels * vision.patch_size**2
    patches = sum(t * h * w for (t, h, w), _ in MERGED_GRIDS)
    image = {
        "pixel_values": rng.standard_normal((patches, width)).astype(np.float32),
        "image_grid_thw": np.array([grid for grid, _ in MERGED_GRIDS], dtype=np.int64),
        "image_merge_sizes": np.array([m for _, m in MERGED_GRIDS], dtype=np.int64),
    }
    ids = list(_text(model, BEFORE, rng))
    for (t, h, w), m in MERGED_GRIDS:
        ids += [config.image_token_id] * (t * h * w // m**2) + list(_text(model, 2, rng))
    return image, np.array([ids + list(_text(model, AFTER, rng))])


def tile_inputs(model, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Idefics 3's processor on a batch of two prompts of one image each: a square image split
    2 x 2 and a wide one split 1 x 2 (each with its global image), so the second prompt's tile
    list ends in two all-zero padding tiles; its first tile then padded (zero pixels, mask 0)
    below and right of a part not on the patch grid, as a smaller image padded to the tile is.
    The prompts hold their tiles' image tokens, the shorter one more text."""
    from transformers import Idefics3ImageProcessorPil

    config, vision = model.config, model.config.vision_config
    side = vision.image_size
    processor = Idefics3ImageProcessorPil(
        size={"longest_edge": 2 * side}, max_image_size={"longest_edge": side}
    )
    shapes = [(side, side, 3), (side // 2, side, 3)]
    images = [rng.integers(0, 256, shape, dtype=np.uint8) for shape in shapes]
    image = dict(processor([[i] for i in images], return_tensors="np"))
    rows, cols = side * 3 // 5, side * 4 // 5 + 1
    image["pixel_values"][1, 0, :, rows:] = image["pixel_values"][1, 0, :, :, cols:] = 0
    image["pixel_attention_mask"][1, 0, rows:] = image["pixel_attention_mask"][1, 0, :, cols:] = 0
    real = (image["pixel_values"] != 0).any(axis=(2, 3, 4)).sum(axis=1)
    per_tile = (side // vision.patch_size // config.scale_factor) ** 2
    longest = real.max() * per_tile
    prompts = [
        [
            *_text(model, BEFORE, rng),
            *[config.image_token_id] * (n * per_tile),
            *_text(model, AFTER + longest - n * per_tile, rng),
        ]
        for n in real
    ]
    return image, np.array(prompts)


# (height, width) of each prompt's images for Idefics 2's processor: the batch is padded to 30 x
# 30 pixels (7 whole 4-pixel patches and 2 rows and columns of a part patch), the first prompt's
# list ends in blank images
PADDED_IMAGES = [[(22, 30)], [(30, 18), (14, 26)]]


def padded_image_inputs(
    model, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Idefics 2's processor, image splitting on (four crops and the whole image, each resized
    on its own), on a batch of two prompts of PADDED_IMAGES; the prompts hold their images'
    tokens, the shorter one more text."""
    from transformers import Idefics2ImageProcessorPil

    config = model.config
    side = config.vision_config.image_size
    processor = Idefics2ImageProcessorPil(
        do_image_splitting=True, size={"shortest_edge": side // 3, "longest_edge": side}
    )
    images = [
        [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in prompt]
        for prompt in PADDED_IMAGES
    ]
    image = dict(processor(images, return_tensors="np"))
    real = (image["pixel_values"] != 0).any(axis=(2, 3, 4)).sum(axis=1)
    per_image = config.perceiver_config.resampler_n_latents
    longest = real.max() * per_image
    prompts = [
        [
            *_text(model, BEFORE, rng),
            *[config.image_token_id] * (n * per_image),
            *_text(model, AFTER + longest - n * per_image, rng),
        ]
        for n in real
    ]
    return image, np.array(prompts)


def sized_inputs(model, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Two images of different sizes in one prompt, padded with noise (which no image token
    may read) into one batch, with their sizes."""
    config = model.config
    height, width = (max(side) for side in zip(*SIZES, strict=True))
    channels = config.vision_config.num_channels
    image = {
        "pixel_values": rng.standard_normal((len(SIZES), channels, height, width)).astype(
            np.float32
        ),
        "image_sizes": np.array(SIZES, dtype=np.int64),
    }
    block = config.vision_config.patch_size * config.spatial_merge_size
    ids = list(_text(model, BEFORE, rng))
    for h, w in SIZES:
        ids += [config.image_token_id] * ((h // block) * (w // block))
        ids += list(_text(model, 2, rng))
    return image, np.array([ids + list(_text(model, AFTER, rng))])


def crop_inputs(model, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Images of other aspects as LLaVA-NeXT's processor crops them (every slot random, so the
    graph must ignore the padding slots), in one prompt."""
    config, vision = model.config, model.config.vision_config
    crop = vision.image_size
    slots = 1 + max(h * w for h, w in config.image_grid_pinpoints) // crop**2
    shape = (len(CROP_SIZES), slots, vision.num_channels, crop, crop)
    image = {
        "pixel_values": rng.standard_normal(shape).astype(np.float32),
        "image_sizes": np.array([[round(h * crop), round(w * crop)] for h, w in CROP_SIZES]),
    }
    if "batch_num_images" in inspect.signature(model.get_image_features).parameters:
        image["batch_num_images"] = np.array(PROMPT_IMAGES)
    with torch.no_grad():
        found = model.get_image_features(**{k: torch.from_numpy(v) for k, v in image.items()})
    ids = list(_text(model, BEFORE, rng))
    for features in found.pooler_output:
        ids += [config.image_token_id] * len(features) + list(_text(model, 2, rng))
    return image, np.array([ids + list(_text(model, AFTER, rng))])


INPUTS = {
    "pixels": pixel_inputs,
    "pixel_pairs": lambda model, rng: pixel_inputs(model, rng, per_prompt=2),
    "patches": patch_inputs,
    "merged_patches": merged_patch_inputs,
    "tiles": tile_inputs,
    "padded_images": padded_image_inputs,
    "sized": sized_inputs,
    "crops": crop_inputs,
}


def step_tokens(model, batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [_text(model, batch, rng)[:, None] for _ in range(STEPS)]


def _extra(model, ids: np.ndarray) -> dict:
    """mm_token_type_ids where the model reads them (transformers 5's Qwen-VL computes its 3-D
    positions from them, and silently uses 1-D ones without)."""
    if "mm_token_type_ids" not in inspect.signature(model.forward).parameters:
        return {}
    return {
        "mm_token_type_ids": torch.from_numpy((ids == model.config.image_token_id).astype(np.int64))
    }


def positions(model, image: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray | None:
    """The prompt's 3-D positions where the model has them (None: 0, 1, ...)."""
    if not hasattr(model.model, "get_rope_index"):
        return None
    try:
        with torch.no_grad():
            found, _ = model.model.get_rope_index(
                torch.from_numpy(ids),
                _extra(model, ids)["mm_token_type_ids"],
                image_grid_thw=torch.from_numpy(image["image_grid_thw"]),
            )
    except AttributeError:  # EXAONE 4.5 inherits Qwen2-VL's method only to refuse it
        return None
    return found.numpy()


def token_types(model, kind: str, whole: np.ndarray, prompt: int) -> dict:
    """The token_type_ids of `kind` (VlmCase.token_types) over the `prompt` first tokens and
    the steps after them."""
    if not kind:
        return {}
    if kind == "image":
        types = whole == model.config.image_token_id
    elif kind == "prefix":
        types = np.broadcast_to(np.arange(whole.shape[1]) >= prompt, whole.shape)
    else:
        raise ValueError(f"no token types {kind!r}")
    return {"token_type_ids": torch.from_numpy(types.astype(np.int64))}


def reference(
    model,
    image: dict[str, np.ndarray],
    ids: np.ndarray,
    steps: list[np.ndarray],
    types: str = "",
):
    """(image features [tokens, hidden], the prompt's inputs_embeds, the logits of the prompt
    and each step token, teacher-forced in one pass, given the token types `types`)."""
    pixels = {k: torch.from_numpy(v) for k, v in image.items()}
    with torch.no_grad():
        output = image_model(model).get_image_features(**pixels)
        features = packed_features(output)
        tokens = torch.from_numpy(ids)
        embeds = model.get_input_embeddings()(tokens)
        indicators = getattr(model.config, "visual_indicator_token_ids", None) or []
        rows = getattr(output, "visual_indicator_features", [])
        # the i-th id takes the i-th indicator row (the table may hold more rows than ids)
        for token, row in zip(indicators, rows, strict=False):
            embeds[tokens == token] = row
        embeds = torch.nn.functional.pad(embeds, (0, features.shape[-1] - embeds.shape[-1]))
        mask = (tokens == model.config.image_token_id)[..., None].expand_as(embeds)
        embeds = embeds.masked_scatter(mask, features)
        whole = np.concatenate([ids, *steps], axis=1)
        logits = model(
            input_ids=torch.from_numpy(whole),
            **pixels,
            **_extra(model, whole),
            **token_types(model, types, whole, ids.shape[1]),
        ).logits.numpy()
    length = ids.shape[1]
    per_step = (logits[:, length + i : length + i + 1] for i in range(len(steps)))
    return features.numpy(), embeds.numpy(), [logits[:, :length], *per_step]


def packed_features(output) -> torch.Tensor:
    """[tokens, width]: every image's features, then (Qwen3-VL) each DeepStack level's beside
    them, as the converted vision graph packs them."""
    levels = getattr(output, "deepstack_features", None) or []
    parts = [output.pooler_output, *levels]
    return torch.cat([torch.cat(list(part)) for part in parts], dim=-1)
