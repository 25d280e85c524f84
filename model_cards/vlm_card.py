"""The card of a vision-language export (image-text-to-text): the three graphs of each variant
folder, and how to run them: onnxruntime-genai's multimodal processor for the types it names
(the prompt carries the family's image placeholder), plain onnxruntime for the others."""

from __future__ import annotations

from typing import Any

from model_cards import card

VLM_TASK = "image-text-to-text"
GENAI = "onnxruntime-genai"


def is_vlm(variants: list[card.VariantInfo]) -> bool:
    return any(v.manifest.get("task") == VLM_TASK for v in variants)


def context(variants: list[card.VariantInfo]) -> dict[str, Any]:
    """What the VLM template reads beyond the generic context."""
    manifest = variants[0].manifest
    placeholder = manifest.get("image_prompt") or ""
    return {
        "genai": all(v.manifest.get("runtime") == GENAI for v in variants),
        # a Python string literal for the snippet (the placeholder comes from mobius, not the
        # source, and holds no quotes or backslashes)
        "image_prompt": placeholder if '"' not in placeholder and "\\" not in placeholder else "",
    }


def front_matter(source: card.SourceInfo, variants: list[card.VariantInfo]) -> dict[str, Any]:
    data = card.front_matter(source, variants)
    if not context(variants)["genai"]:
        data["tags"] = [t for t in data["tags"] if t != GENAI]
    return data
