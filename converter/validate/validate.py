"""validate(): prove a package in onnxruntime against a reference, with numbers.

The package runs its task's probe on the host's EP. The reference is `transformers` on the
same checkpoint when it is installed, otherwise the portable `default` f32 variant built on the
fly. A variant whose EP is not on the host is checked structurally and reported as not executed,
never as passed; the `default` f32 variant without transformers has no reference but itself and
is reported as unverified.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import onnxruntime as ort

from converter.errors import MobiusError, SourceError, missing_modules, require_extra
from converter.execution_providers import EXECUTION_PROVIDERS
from converter.features import FP8_KV_CACHE, STATIC_CACHE, TEXT_ONLY
from converter.package import MANIFEST
from converter.source import Source, resolve_source
from converter.tasks.seq2seq import SEQ2SEQ_TASKS
from converter.tasks.vision_language import VLM_TASK
from converter.validate import encoding, seq2seq, text_generation, vision_language
from converter.validate.report import ValidationReport, thresholds_of
from converter.validate.runtime import OnnxDecoder, OnnxEncoder
from converter.validate.seq2seq_runtime import OnnxSeq2Seq
from converter.validate.vlm_runtime import OnnxVisionLanguage

DECODE_STEPS = 8
REFERENCES = ("auto", "transformers", "default")
REFERENCE_EXTRA = ("validate", ("torch", "transformers"))  # pyproject.toml's extra
PROBES = {
    "text-generation": text_generation,
    VLM_TASK: vision_language,
    **dict.fromkeys(SEQ2SEQ_TASKS, seq2seq),
}


def _probe(manifest: dict):
    """The probe of the package's task: text generation's, the encoder-decoders' (also for
    speech recognition by an encoder-decoder: Whisper), or the encoders' one for every other
    task."""
    return seq2seq if _encoder_decoder(manifest) else PROBES.get(manifest["task"], encoding)


def _encoder_decoder(manifest: dict) -> bool:
    """An encoder-decoder package: a seq2seq task, or another task whose graphs include a
    decoder (speech recognition by Whisper, where CTC models have an encoder alone)."""
    if manifest["task"] in ("text-generation", VLM_TASK):  # their decoders read no encoder
        return False
    roles = {c["role"] for c in _components(manifest)}
    return manifest["task"] in SEQ2SEQ_TASKS or "decoder" in roles


def validate(
    package: str | Path,
    *,
    reference: str = "auto",
    steps: int = DECODE_STEPS,
    source: str | Path | Source | None = None,
) -> ValidationReport:
    """Validate a saved package; `reference` is "auto", "transformers" or "default".

    `source` is the checkpoint the package was built from (a folder, a Hub id or a resolved
    `Source`); by default the one its manifest records.
    """
    _check_arguments(reference, steps)
    package = Path(package)
    manifest = _read_manifest(package)
    ep = EXECUTION_PROVIDERS[manifest["ep"]]
    fp8_kv_cache = FP8_KV_CACHE in manifest.get("features", [])
    report = ValidationReport(
        package=str(package),
        ep=ep.name,
        dtype=manifest["dtype"],
        status="not executed",
        thresholds=thresholds_of(manifest["dtype"], fp8_kv_cache),
        fallbacks=manifest.get("lowering", {}).get("fallbacks", []),
    )
    probe = _probe(manifest)
    report.failures += probe.missing_files(package)
    if ep.ort_provider not in ort.get_available_providers():
        from converter.kernels import structural_report

        for component in _components(manifest):
            found = structural_report(package / component["filename"], ep.name)
            if report.structural is None:
                report.structural = found
            else:
                report.structural["unsupported_ops"] += found["unsupported_ops"]
            if found["checker"] != "ok":
                checker = found["status"]
                report.failures.append(
                    f"the ONNX checker rejects {component['filename']}: {checker}"
                )
        return report.conclude("not executed")
    kind = _reference_kind(reference)
    # (with a float8 cache the rebuilt reference differs: its cache is exact)
    if kind == "default-f32" and (ep.name, report.dtype, fp8_kv_cache) == ("default", "f32", False):
        report.reason = _self_comparison(reference)
        return report.conclude("unverified")
    source = _resolved(source) if source is not None else _source_of(manifest)
    with tempfile.TemporaryDirectory(prefix="mobius-reference-") as scratch:
        report.reference = kind
        reference = _reference(kind, source, Path(scratch), manifest)
        probe.probe(package, ep.ort_provider, reference, report, steps)
    return report.conclude("passed")


def _components(manifest: dict) -> list[dict]:
    """The package's graphs; packages written before components were recorded hold one."""
    return manifest.get("components") or [{"role": "decoder", "filename": "model.onnx"}]


def _check_arguments(reference: str, steps: int) -> None:
    if reference not in REFERENCES:
        raise MobiusError(f"unknown reference {reference!r}: use one of {', '.join(REFERENCES)}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise MobiusError(f"steps must be a whole number of at least 1, got {steps!r}")
    if reference == "transformers":
        require_extra(*REFERENCE_EXTRA, needed_by="the transformers reference")


def _read_manifest(package: Path) -> dict:
    path = package / MANIFEST
    if not path.is_file():
        raise MobiusError(f"{package} is not a mobius package: it has no mobius.json")
    return json.loads(path.read_text())


def _reference_kind(reference: str) -> str:
    if reference == "transformers" or (
        reference == "auto" and not missing_modules(REFERENCE_EXTRA[1])
    ):
        return "transformers"
    return "default-f32"


def _self_comparison(reference: str) -> str:
    install = f'pip install "mobius-hub[{REFERENCE_EXTRA[0]}]"'
    if reference == "default":
        return (
            "the default reference is this same variant rebuilt, so nothing independent checked "
            f"it: use the transformers reference ({install})"
        )
    return (
        "no independent reference: torch and transformers are not installed, and the default "
        f"f32 variant would only be compared with itself. Install them with: {install}"
    )


def _resolved(source: str | Path | Source) -> Source:
    return source if isinstance(source, Source) else resolve_source(str(source), progress=False)


def _source_of(manifest: dict) -> Source:
    origin = manifest["source"]
    hint = (
        "validate compares against the checkpoint the package was built from: "
        "give its location with --source DIR (Python: source=DIR)"
    )
    if origin.get("repo_id"):
        try:
            return resolve_source(origin["repo_id"], revision=origin["revision"], progress=False)
        except SourceError as err:
            raise SourceError(f"{err}; {hint}") from None
    if Path(origin["path"]).is_file():  # `mobius build-gguf`'s GGUF file
        raise SourceError(
            f"the package was built from the GGUF file {origin['path']}; validate compares "
            "against a safetensors checkpoint: give the model's with --source DIR (Python: "
            "source=DIR)"
        )
    if not Path(origin["path"]).is_dir():
        raise SourceError(f"the package was built from {origin['path']}, which is gone; {hint}")
    return resolve_source(origin["path"], progress=False)


def _reference(kind: str, source: Source, scratch: Path, manifest: dict):
    task, encoder_decoder = manifest["task"], _encoder_decoder(manifest)
    # the reference keeps the usual cache: a static one changes where keys live, not logits
    features = [f for f in manifest.get("features", []) if f != STATIC_CACHE]
    if kind == "transformers":
        from converter.validate.reference import (
            TransformersEncoder,
            TransformersReference,
            TransformersSeq2Seq,
            TransformersVisionLanguage,
        )

        if task == VLM_TASK:
            return TransformersVisionLanguage.load(source.path)

        if task == "text-generation":
            return TransformersReference.load(source.path, TEXT_ONLY in features)
        if encoder_decoder:
            return TransformersSeq2Seq.load(source.path)
        return TransformersEncoder.load(source.path, task)
    from converter.build import build

    exact = [f for f in features if f != FP8_KV_CACHE]  # the reference keeps its cache exact
    package = build(
        str(source.path), ep="default", dtype="f32", task=task, features=exact, progress=False
    )
    package.save(scratch, progress=False)
    if encoder_decoder:
        return OnnxSeq2Seq(scratch)
    if task == VLM_TASK:
        return OnnxVisionLanguage(scratch)
    return OnnxDecoder(scratch) if task == "text-generation" else OnnxEncoder(scratch)
