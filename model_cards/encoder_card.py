"""The card of an encoder or encoder-decoder export (every task but text generation): the
Transformers.js / Optimum / sentence-transformers layout of model_cards/layout.py, usage for
those libraries."""

from __future__ import annotations

from typing import Any

from converter.tasks.seq2seq import SEQ2SEQ_TASKS
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


# what the card says of each kind of export: its portable files, and what validation compared
ENCODER_TEXT = {
    "readers": "Transformers.js, Optimum and sentence-transformers",
    "portable_files": "`onnx/model.onnx` (float32), `onnx/model_fp16.onnx`, "
    "`onnx/model_quantized.onnx` (int8) and `onnx/model_q4.onnx`",
    "portable_glob": "`onnx/model*.onnx`",
    "int8_files": "`onnx/model_quantized.onnx`",
    "compared": "every output of each graph (hidden states, pooled outputs and logits, as the "
    "graph has them)",
    "compared_on": "one fixed batch of two inputs, the second padded: max abs diff and the "
    "lowest cosine similarity, padded positions left out",
}
SEQ2SEQ_TEXT = {
    "readers": "Transformers.js and Optimum",
    "portable_files": "`onnx/encoder_model.onnx` and `onnx/decoder_model_merged.onnx` "
    "(float32, the decoder with its self- and cross-attention caches), with `_fp16`, "
    "`_quantized` (int8) and `_q4` beside them",
    "portable_glob": "`onnx/encoder_model*.onnx`, `onnx/decoder_model_merged*.onnx`",
    "int8_files": "`onnx/*_quantized.onnx`",
    "compared": "the decoder's logits (teacher-forced on the reference's greedy tokens: a first "
    "step without a cache, then one token per step with both caches)",
    "compared_on": "one fixed batch of two sources, the second padded: max abs diff and the "
    "lowest cosine similarity",
}


def is_encoder(variants: list[card.VariantInfo]) -> bool:
    """Every task but text generation and the vision-language models' (model_cards/vlm_card)."""
    generative = ("text-generation", "image-text-to-text")
    return any(v.manifest.get("task", "text-generation") not in generative for v in variants)


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
    generates = task in SEQ2SEQ_TASKS
    return {
        "task": task,
        "sentence_transformers": any(v.manifest.get("sentence_transformers") for v in variants),
        "load_id": repo_id or "path/to/the/export",
        "js_task": task,
        "js_input": JS_INPUTS.get(task, '"ONNX runs everywhere."'),
        "js_options": ", { max_new_tokens: 64 }" if generates else "",
        "generates": generates,
        "optimum_class": "ORTModelForSeq2SeqLM"
        if generates
        else OPTIMUM_CLASSES.get(task, "ORTModel"),
        "primary_graph": primary["graphs"][0],
        **(SEQ2SEQ_TEXT if generates else ENCODER_TEXT),
    }
