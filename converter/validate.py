"""validate(): prove a package in onnxruntime against a reference, with numbers.

The package runs a fixed prompt (prefill) and greedy decode steps on the host's EP. The
reference is `transformers` on the same checkpoint when it is installed, otherwise the
portable `default` f32 variant built on the fly. Logits are compared teacher-forced on the
reference's greedy tokens (so every position sees the same context); greedy decoding is
compared free-running. A variant whose EP is not on the host is checked structurally and
reported as not executed, never as passed; the `default` f32 variant without transformers
has no reference but itself and is reported as unverified.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import onnxruntime as ort

from converter.errors import MobiusError, SourceError, missing_modules, require_extra
from converter.execution_providers import EXECUTION_PROVIDERS
from converter.runtime import OnnxDecoder
from converter.source import Source, resolve_source

PROMPT_LENGTH = 16
DECODE_STEPS = 8
REFERENCES = ("auto", "transformers", "default")
REFERENCE_EXTRA = ("validate", ("torch", "transformers"))  # pyproject.toml's extra
# onnxruntime-genai's tokenizer reads both (measured with 0.18: either missing fails to load).
GENAI_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
# A variant may be published with these; "not executed" is labelled as such on the card.
PUBLISHABLE = ("passed", "not executed")

# Picked on the tiny *trained* Llama of examples/ and three scratch variants (84 runs):
# max_abs_diff 3x the worst measured, cosine 1 - 10x the worst gap, top-1 one flipped row
# below the worst; every deliberately broken package fails them. See docs/validation.md.
THRESHOLDS: dict[str, dict[str, float]] = {
    "f32": {"max_abs_diff": 1e-4, "min_cosine": 0.99999, "top1_agreement": 1.0},
    "f16": {"max_abs_diff": 2.5e-2, "min_cosine": 0.9999, "top1_agreement": 0.95},
    "bf16": {"max_abs_diff": 3e-1, "min_cosine": 0.995, "top1_agreement": 0.9},
    "int4": {"min_cosine": 0.7, "top1_agreement": 0.7},
}


@dataclass
class ValidationReport:
    package: str
    ep: str
    dtype: str
    status: str  # "passed" | "failed" | "not executed" | "unverified"
    reference: str | None = None  # "transformers" | "default-f32"
    reason: str | None = None  # why the status is "unverified"
    max_abs_diff: float | None = None
    min_cosine: float | None = None
    top1_agreement: float | None = None
    greedy_match: float | None = None  # leading greedy tokens equal to the reference's
    load_seconds: float | None = None
    tokens_per_second: float | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    structural: dict | None = None
    fallbacks: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


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
    report = ValidationReport(
        package=str(package),
        ep=ep.name,
        dtype=manifest["dtype"],
        status="not executed",
        thresholds=THRESHOLDS[manifest["dtype"]],
        fallbacks=manifest.get("lowering", {}).get("fallbacks", []),
        failures=_missing_runtime_files(package, manifest),
    )
    if ep.ort_provider not in ort.get_available_providers():
        from converter.kernels import structural_report

        report.structural = structural_report(package / "model.onnx", ep.name)
        if report.structural["checker"] != "ok":
            checker = report.structural["status"]
            report.failures.append(f"the ONNX checker rejects the model: {checker}")
        return _concluded(report, "not executed")
    kind = _reference_kind(reference)
    if kind == "default-f32" and (ep.name, report.dtype) == ("default", "f32"):
        report.reason = _self_comparison(reference)
        return _concluded(report, "unverified")
    candidate = OnnxDecoder(package, ep.ort_provider)
    vocab = json.loads((package / "genai_config.json").read_text())["model"]["vocab_size"]
    prompt = np.random.default_rng(0).integers(0, vocab, size=(1, PROMPT_LENGTH))
    source = _resolved(source) if source is not None else _source_of(manifest)
    with tempfile.TemporaryDirectory(prefix="mobius-reference-") as scratch:
        ref = _reference(kind, source, Path(scratch))
        report.reference = kind
        expected_tokens, _ = ref.greedy(prompt, steps)
        expected = ref.run(prompt, np.ones_like(prompt), _as_steps(expected_tokens[:-1]))
    actual = candidate.run(prompt, np.ones_like(prompt), _as_steps(expected_tokens[:-1]))
    tokens, report.tokens_per_second = candidate.greedy(prompt, steps)
    report.load_seconds = candidate.load_seconds
    _compare(report, np.concatenate(expected, axis=1), np.concatenate(actual, axis=1))
    report.greedy_match = _leading_matches(tokens, expected_tokens) / steps
    return _concluded(report, "passed")


def _check_arguments(reference: str, steps: int) -> None:
    if reference not in REFERENCES:
        raise MobiusError(f"unknown reference {reference!r}: use one of {', '.join(REFERENCES)}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise MobiusError(f"steps must be a whole number of at least 1, got {steps!r}")
    if reference == "transformers":
        require_extra(*REFERENCE_EXTRA, needed_by="the transformers reference")


def _read_manifest(package: Path) -> dict:
    path = package / "mobius.json"
    if not path.is_file():
        raise MobiusError(f"{package} is not a mobius package: it has no mobius.json")
    return json.loads(path.read_text())


def _missing_runtime_files(package: Path, manifest: dict) -> list[str]:
    missing = [name for name in GENAI_TOKENIZER_FILES if not (package / name).is_file()]
    if manifest.get("task") != "text-generation" or not missing:
        return []
    return [
        f"no tokenizer: onnxruntime-genai cannot run this package without {' and '.join(missing)}"
        " (copy them from the model's repo into the package)"
    ]


def _concluded(report: ValidationReport, status: str) -> ValidationReport:
    """`status` unless a check failed."""
    report.status = "failed" if report.failures else status
    return report


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


def format_report(report: ValidationReport) -> str:
    """A short human table."""
    rows = [("package", report.package), ("variant", f"{report.ep} / {report.dtype}")]
    rows.append(("status", report.status.upper()))
    if report.structural is not None:
        rows.append(("structural check", report.structural["status"]))
        rows += [("unsupported op", line) for line in report.structural["unsupported_ops"]]
    if report.max_abs_diff is not None:
        rows += [
            ("reference", report.reference),
            ("max abs diff", f"{report.max_abs_diff:.3g}"),
            ("min cosine", f"{report.min_cosine:.6f}"),
            ("top-1 agreement", f"{report.top1_agreement:.1%}"),
            ("greedy match", f"{report.greedy_match:.1%}"),
            ("load time", f"{report.load_seconds:.2f} s"),
            ("decode speed", f"{report.tokens_per_second:.1f} tokens/s"),
        ]
    if report.reason:
        rows.append(("reason", report.reason))
    rows += [("failed", line) for line in report.failures]
    rows += [("note", line) for line in report.fallbacks]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def summarize(report: dict) -> str:
    """One line for a report (as_dict): the status and its evidence."""
    status = report["status"]
    if report.get("max_abs_diff") is not None:
        status += (
            f" (max abs diff {report['max_abs_diff']:.3g}, top-1 {report['top1_agreement']:.1%},"
            f" vs {report['reference']})"
        )
    details = [*report.get("failures", []), *filter(None, [report.get("reason")])]
    return "; ".join([status, *details])


def _as_steps(tokens: list[int]) -> list[np.ndarray]:
    return [np.array([[t]], dtype=np.int64) for t in tokens]


def _leading_matches(a: list[int], b: list[int]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def _compare(report: ValidationReport, expected: np.ndarray, actual: np.ndarray) -> None:
    e = expected.reshape(-1, expected.shape[-1]).astype(np.float64)
    a = actual.reshape(-1, actual.shape[-1]).astype(np.float64)
    report.max_abs_diff = float(np.abs(e - a).max())
    norms = np.linalg.norm(e, axis=1) * np.linalg.norm(a, axis=1)
    report.min_cosine = float(((e * a).sum(axis=1) / np.maximum(norms, 1e-30)).min())
    report.top1_agreement = float((e.argmax(axis=1) == a.argmax(axis=1)).mean())
    for metric, bound in report.thresholds.items():
        value = getattr(report, metric)
        ok = value <= bound if metric == "max_abs_diff" else value >= bound
        if not ok:
            report.failures.append(f"{metric} {value:.6g} misses the {report.dtype} bound {bound}")


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
    if not Path(origin["path"]).is_dir():
        raise SourceError(f"the package was built from {origin['path']}, which is gone; {hint}")
    return resolve_source(origin["path"], progress=False)


def _reference(kind: str, source: Source, scratch: Path):
    if kind == "transformers":
        return TransformersReference(source.path)
    from converter.build import build

    build(str(source.path), ep="default", dtype="f32", progress=False).save(scratch, progress=False)
    return OnnxDecoder(scratch)


class TransformersReference:
    """transformers on the same checkpoint, f32, eager attention, with its own KV cache."""

    def __init__(self, folder: Path):
        import torch
        import transformers

        self.torch = torch
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, dtype=torch.float32, attn_implementation="eager"
        ).eval()

    def run(self, ids: np.ndarray, mask: np.ndarray, steps: list[np.ndarray]) -> list[np.ndarray]:
        torch, outputs, cache = self.torch, [], None
        position = np.clip(mask.cumsum(-1) - 1, 0, None)
        with torch.no_grad():
            for token in [ids, *steps]:
                if cache is not None:
                    mask = np.concatenate([mask, np.ones((mask.shape[0], 1), mask.dtype)], 1)
                    position = position[:, -1:] + 1
                out = self.model(
                    input_ids=torch.tensor(token),
                    attention_mask=torch.tensor(mask),
                    position_ids=torch.tensor(position),
                    cache=cache,
                    use_cache=True,
                )
                cache = out.cache
                outputs.append(out.logits.float().numpy())
        return outputs

    def greedy(self, ids: np.ndarray, new_tokens: int) -> tuple[list[int], float]:
        with self.torch.no_grad():
            out = self.model.generate(
                self.torch.tensor(ids),
                attention_mask=self.torch.ones(ids.shape, dtype=self.torch.long),
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=False,
            )
        return out[0, ids.shape[1] :].tolist(), float("nan")
