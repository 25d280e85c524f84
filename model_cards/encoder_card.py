"""The card of an encoder export (every task but text generation): the Transformers.js /
Optimum / sentence-transformers layout of model_cards/layout.py, usage for those libraries."""

from __future__ import annotations

from typing import Any

from model_cards import card
from model_cards.layout import graph_paths

TAGS = ("onnx", "onnxruntime", "transformers.js", "mobius")
OPTIMUM_CLASSES = {
    "feature-extraction": "ORTModelForFeatureExtraction",
    "fill-mask": "ORTModelForMaskedLM",
    "text-classification": "ORTModelForSequenceClassification",
    "token-classification": "ORTModelForTokenClassification",
    "question-answering": "ORTModelForQuestionAnswering",
    "image-classification": "ORTModelForImageClassification",
    "image-feature-extraction": "ORTModelForFeatureExtraction",
    "automatic-speech-recognition": "ORTModelForCTC",
    "audio-classification": "ORTModelForAudioClassification",
}
SAMPLE_IMAGE = "https://huggingface.co/datasets/Xenova/transformers.js-docs/resolve/main/cats.jpg"
SAMPLE_AUDIO = "https://huggingface.co/datasets/Xenova/transformers.js-docs/resolve/main/jfk.wav"
JS_INPUTS = {  # a JavaScript expression each pipeline accepts
    "fill-mask": "`The capital of France is ${run.tokenizer.mask_token}.`",
    "question-answering": '"What runs everywhere?", "ONNX runs everywhere."',
    "image-classification": f'"{SAMPLE_IMAGE}"',
    "image-feature-extraction": f'"{SAMPLE_IMAGE}"',
    "zero-shot-image-classification": f'"{SAMPLE_IMAGE}", ["a cat", "a dog"]',
    "automatic-speech-recognition": f'"{SAMPLE_AUDIO}"',
    "audio-classification": f'"{SAMPLE_AUDIO}"',
}


def is_encoder(variants: list[card.VariantInfo]) -> bool:
    return any(v.manifest.get("task", "text-generation") != "text-generation" for v in variants)


def task_of(variants: list[card.VariantInfo]) -> str:
    return variants[0].manifest["task"]


def front_matter(source: card.SourceInfo, variants: list[card.VariantInfo]) -> dict[str, Any]:
    """The generic card's metadata (the source's pipeline tag, else the task), the library
    that loads it (sentence-transformers for its repos, else Transformers.js), encoder tags."""
    data = card.front_matter(source, variants)
    st = any(v.manifest.get("sentence_transformers") for v in variants)
    data["library_name"] = "sentence-transformers" if st else "transformers.js"
    eps = [t for t in data["tags"] if t not in card.BASE_TAGS]
    data["tags"] = [*TAGS, *eps]
    return data


def context(variants: list[card.VariantInfo], rows: list[dict], repo_id: str | None) -> dict:
    """What the encoder template reads beyond the generic context."""
    task = task_of(variants)
    by_name = {f"{v.ep}-{v.dtype}": v for v in variants}
    for row in rows:
        variant = by_name[row["name"]]
        row["graphs"] = [card._cell(p) for p in graph_paths(variant.manifest)]
        row["cosine"] = card._number((variant.report or {}).get("min_cosine"), "{:.6f}")
    primary = card._primary(rows)
    return {
        "task": task,
        "sentence_transformers": any(v.manifest.get("sentence_transformers") for v in variants),
        "load_id": repo_id or "path/to/the/export",
        "js_task": task,
        "js_input": JS_INPUTS.get(task, '"ONNX runs everywhere."'),
        "optimum_class": OPTIMUM_CLASSES.get(task, "ORTModel"),
        "primary_graph": primary["graphs"][0],
        "outputs_text": "hidden states, pooled outputs and logits, as the graph has them",
    }
