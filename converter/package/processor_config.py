"""processor_config.json: the image preprocessing onnxruntime-genai's processors run
(onnxruntime-extensions transforms), written from the source's preprocessor_config.json (the
transformers image processor's settings) for the VLM types genai names. A setting the
transforms cannot reproduce is refused by name rather than silently changed."""

from __future__ import annotations

import functools
from typing import Any

from converter.errors import ConfigError

PROCESSOR_CONFIG = "processor_config.json"
PREPROCESSOR_CONFIG = "preprocessor_config.json"
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
BICUBIC = 3  # PIL's resample code, transformers' default for Qwen-VL and Pixtral
PIXTRAL_SIZE = {"longest_edge": 1024}  # transformers' PixtralImageProcessor default
HALF = [0.5, 0.5, 0.5]  # transformers' IMAGENET_STANDARD_MEAN and _STD, Gemma 3's defaults


def _operation(name: str, kind: str, **attrs: Any) -> dict:
    operation = {"name": name, "type": kind}
    return {"operation": {**operation, "attrs": attrs} if attrs else operation}


def _resized(pre: dict[str, Any]) -> None:
    """The steps every genai image processor runs: resize, rescale, normalize."""
    for key, wanted in (("do_resize", True), ("do_rescale", True), ("do_normalize", True)):
        if pre.get(key, wanted) is not wanted:
            raise ConfigError(f"{PREPROCESSOR_CONFIG}: '{key}' = {pre[key]!r} is not supported")


def _resized_bicubic(pre: dict[str, Any]) -> None:
    """Those steps, the resize bicubic (Qwen-VL's and Pixtral's processors)."""
    _resized(pre)
    if pre.get("resample", BICUBIC) != BICUBIC:
        raise ConfigError(f"{PREPROCESSOR_CONFIG}: only bicubic resampling is supported")


def qwen_vl(pre: dict[str, Any], vision, kind: str = "qwen2_5_vl") -> dict:
    """Qwen2-VL's image processor: smart resize to whole merge blocks within the pixel budget,
    rescale, normalize, flatten into patches (frames repeated to temporal_patch_size); `kind`
    is genai's VLM type the processor is named for."""
    _resized_bicubic(pre)
    size = pre.get("size") or {}
    for key, model_value in (
        ("patch_size", vision.patch_size),
        ("merge_size", vision.spatial_merge_size),
        ("temporal_patch_size", vision.temporal_patch_size),
    ):
        if pre.get(key, model_value) != model_value:
            raise ConfigError(
                f"{PREPROCESSOR_CONFIG}: '{key}' = {pre[key]} differs from the model's "
                f"{model_value}"
            )
    patch, merge = vision.patch_size, vision.spatial_merge_size
    return {
        "processor": {
            "name": QWEN_PROCESSORS[kind],
            "transforms": [
                _operation("decode_image", "DecodeImage", color_space="RGB"),
                _operation("convert_to_rgb", "ConvertRGB"),
                _operation(
                    "resize",
                    "Resize",
                    smart_resize=1,
                    min_pixels=int(pre.get("min_pixels") or size.get("shortest_edge", 56 * 56)),
                    max_pixels=int(
                        pre.get("max_pixels") or size.get("longest_edge", 28 * 28 * 1280)
                    ),
                    patch_size=patch,
                    merge_size=merge,
                ),
                _operation("rescale", "Rescale", rescale_factor=pre.get("rescale_factor", 1 / 255)),
                _operation(
                    "normalize",
                    "Normalize",
                    mean=list(pre.get("image_mean", CLIP_MEAN)),
                    std=list(pre.get("image_std", CLIP_STD)),
                    **{kind: 1},
                ),
                _operation(
                    "patch_image",
                    "PatchImage",
                    patch_size=patch,
                    temporal_patch_size=vision.temporal_patch_size,
                    merge_size=merge,
                ),
            ],
        }
    }


def pixtral(pre: dict[str, Any], vision) -> dict:
    """Pixtral's image processor (Mistral 3): resize to whole merge blocks, rescale, normalize,
    channels first; the images of a prompt padded into one batch beside their sizes. genai's
    resize rounds each side to the nearest whole block within a pixel budget (longest_edge²)
    where transformers' rounds up within the longest edge: both leave an image whose sides are
    already whole blocks within that edge as it is."""
    _resized_bicubic(pre)
    longest = (pre.get("size") or PIXTRAL_SIZE).get("longest_edge")
    if not isinstance(longest, int) or isinstance(longest, bool) or longest < 1:
        raise ConfigError(f"{PREPROCESSOR_CONFIG}: 'size' must give a 'longest_edge' in pixels")
    patch, merge = vision.patch_size, vision.spatial_merge_size
    return {
        "processor": {
            "name": "pixtral_image_processor",
            "transforms": [
                # decoded as RGB already (ConvertRGB would swap the channels back to BGR)
                _operation("decode_image", "DecodeImage", color_space="RGB"),
                _operation(
                    "resize",
                    "Resize",
                    smart_resize=1,
                    min_pixels=(patch * merge) ** 2,
                    max_pixels=longest**2,
                    patch_size=patch,
                    merge_size=merge,
                ),
                _operation("rescale", "Rescale", rescale_factor=pre.get("rescale_factor", 1 / 255)),
                _operation(
                    "normalize",
                    "Normalize",
                    mean=list(pre.get("image_mean", CLIP_MEAN)),
                    std=list(pre.get("image_std", CLIP_STD)),
                ),
                _operation("to_channel_first", "Permute3D", dims=[2, 0, 1]),
                _operation("pixtral_image_sizes", "PixtralImageSizes"),
            ],
        }
    }


# PIL's resample codes -> onnxruntime-extensions' Resize interpolation
INTERPOLATIONS = {0: "NEAREST", 1: "LANCZOS", 2: "LINEAR", 3: "CUBIC"}


def gemma3(pre: dict[str, Any], vision) -> dict:
    """Gemma 3's image processor: every image resized to the tower's square (aspect ratio not
    kept), rescaled, normalized, channels first. Pan-and-scan crops are not reproduced."""
    _resized(pre)
    if pre.get("do_pan_and_scan"):
        raise ConfigError(f"{PREPROCESSOR_CONFIG}: 'do_pan_and_scan' crops are not supported")
    resample = pre.get("resample", 2)
    if resample not in INTERPOLATIONS:
        raise ConfigError(f"{PREPROCESSOR_CONFIG}: 'resample' = {resample!r} is not supported")
    size = pre.get("size") or {}
    side = vision.image_size
    if (size.get("height", side), size.get("width", side)) != (side, side):
        raise ConfigError(
            f"{PREPROCESSOR_CONFIG}: 'size' = {size!r} differs from the tower's {side} x {side}"
        )
    return {
        "processor": {
            "name": "gemma_3_image_processing",
            "transforms": [
                # RGB already: a ConvertRGB after it would swap the channels back
                _operation("decode_image", "DecodeImage", color_space="RGB"),
                _operation(
                    "resize",
                    "Resize",
                    interpolation=INTERPOLATIONS[resample],
                    height=side,
                    width=side,
                    keep_aspect_ratio=0,
                ),
                _operation("rescale", "Rescale", rescale_factor=pre.get("rescale_factor", 1 / 255)),
                _operation(
                    "normalize",
                    "Normalize",
                    mean=list(pre.get("image_mean", HALF)),
                    std=list(pre.get("image_std", HALF)),
                ),
                _operation("to_channel_first", "Permute3D", dims=[2, 0, 1]),
            ],
        }
    }


QWEN_PROCESSORS = {"qwen2_5_vl": "qwen2_5_image_processor", "qwen3_vl": "qwen3_vl_image_processor"}

# onnxruntime-genai's VLM type -> the writer of its processor_config.json
WRITERS = {
    "qwen2_5_vl": qwen_vl,
    "qwen3_vl": functools.partial(qwen_vl, kind="qwen3_vl"),
    "mistral3": pixtral,
    "gemma3": gemma3,
}
