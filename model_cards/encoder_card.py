"""The card of an encoder or encoder-decoder export (every task but text generation): the
Transformers.js / Optimum / sentence-transformers layout of model_cards/layout.py, usage for
those of the libraries that run it (encoder-decoders: model_cards/runtimes.py)."""

from __future__ import annotations

from typing import Any

from converter.tasks.seq2seq import SEQ2SEQ_TASKS
from model_cards import card, runtimes
from model_cards.layout import GENAI_ROLES, graph_paths

TAGS = ("onnx", "onnxruntime", "mobius")
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
# speech recognition by an encoder-decoder (Whisper, Moonshine): SEQ2SEQ_TEXT's graphs and checks
SPEECH_TEXT = {
    **SEQ2SEQ_TEXT,
    "compared_on": "one fixed batch of two inputs (log-mel spectrograms or waveforms): max abs "
    "diff and the lowest cosine similarity",
}


def is_encoder(variants: list[card.VariantInfo]) -> bool:
    """Every task but text generation and the vision-language models' (model_cards/vlm_card)."""
    generative = ("text-generation", "image-text-to-text")
    return any(v.manifest.get("task", "text-generation") not in generative for v in variants)


def task_of(variants: list[card.VariantInfo]) -> str:
    return variants[0].manifest["task"]


def front_matter(source: card.SourceInfo, variants: list[card.VariantInfo]) -> dict[str, Any]:
    """The generic card's metadata (the source's pipeline tag, else the task), the library
    that loads it (sentence-transformers for its repos, else Transformers.js where it runs the
    export: none named otherwise), encoder tags."""
    data = card.front_matter(source, variants)
    js = _transformers_js(variants)
    if any(v.manifest.get("sentence_transformers") for v in variants):
        data["library_name"] = "sentence-transformers"
    elif js:
        data["library_name"] = "transformers.js"
    eps = [t for t in data["tags"] if t not in card.BASE_TAGS]
    data["tags"] = [*TAGS[:2], *(["transformers.js"] if js else []), *TAGS[2:], *eps]
    return data


def _generates(variants: list[card.VariantInfo]) -> bool:
    """An encoder-decoder (text or speech): a decoder among the components."""
    return any(c["role"] == "decoder" for v in variants for c in v.manifest.get("components", []))


def _transformers_js(variants: list[card.VariantInfo]) -> bool:
    model_type = variants[0].manifest["model_type"]
    return not _generates(variants) or runtimes.transformers_js_runs(model_type)


def _runners(js: bool, optimum: bool) -> str:
    names = [n for n, runs in (("Transformers.js", js), ("Optimum", optimum)) if runs]
    return " and ".join(names) or "onnxruntime"


def context(variants: list[card.VariantInfo], rows: list[dict], repo_id: str | None) -> dict:
    """What the encoder template reads beyond the generic context."""
    task = task_of(variants)
    by_name = {f"{v.ep}-{v.dtype}": v for v in variants}
    for row in rows:
        variant = by_name[row["name"]]
        row["graphs"] = [card._cell(p) for p in graph_paths(variant.manifest)]
        row["cosine"] = card._number((variant.report or {}).get("min_cosine"), "{:.6f}")
    primary = card._primary(rows)
    roles = {c["role"] for v in variants for c in v.manifest.get("components", [])}
    speech = task not in SEQ2SEQ_TASKS and "decoder" in roles  # Whisper's, not CTC's
    generates = task in SEQ2SEQ_TASKS or speech
    optimum = "ORTModelForSpeechSeq2Seq" if speech else "ORTModelForSeq2SeqLM"
    model_type = variants[0].manifest["model_type"]
    js = _transformers_js(variants)
    runs_optimum = not generates or runtimes.optimum_runs(model_type)
    # M2M-100/NLLB translate into the language whose token the decoder starts with
    target_language = generates and model_type in runtimes.TARGET_LANGUAGE
    js_languages = target_language and task == "translation"
    js_input = JS_INPUTS.get(task, '"ONNX runs everywhere."')
    return {
        "task": task,
        "sentence_transformers": any(v.manifest.get("sentence_transformers") for v in variants),
        "load_id": repo_id or "path/to/the/export",
        "js_task": task,
        "js_input": js_input,
        "js_audio": SAMPLE_AUDIO in js_input,  # Node decodes no URL: the card says what instead
        "js_options": (
            ', { src_lang: "en", tgt_lang: "fr", max_new_tokens: 64 }'
            if js_languages
            else ", { max_new_tokens: 64 }"
            if generates
            else ""
        ),
        "js_languages": js_languages,
        "target_language": target_language,
        "generates": generates,
        "speech": speech,
        "genai": bool(roles & set(GENAI_ROLES)),
        "js_runs": js,
        "transformers_js_version": runtimes.TRANSFORMERS_JS_VERSION,
        "optimum": runs_optimum,
        "optimum_version": runtimes.OPTIMUM_VERSION,
        "optimum_refusal": runtimes.OPTIMUM_REFUSES.get(model_type, "") if generates else "",
        "optimum_caveat": runtimes.OPTIMUM_CAVEATS.get(model_type, "") if generates else "",
        "optimum_class": optimum if generates else OPTIMUM_CLASSES.get(task, "ORTModel"),
        "primary": primary,
        "primary_graph": primary["graphs"][0],
        "runners": _runners(js, runs_optimum),
        "sample_audio": SAMPLE_AUDIO,
        **(SPEECH_TEXT if speech else SEQ2SEQ_TEXT if generates else ENCODER_TEXT),
    }
