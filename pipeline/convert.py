"""The conversion job both front doors run: resolve -> build each variant -> validate ->
card -> publish. `mobius convert` calls `convert` directly; queue workers call `run`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi

import model_cards
from converter.build import build
from converter.errors import MobiusError
from converter.execution_providers import execution_provider
from converter.source import Source, resolve_source
from converter.validate import validate
from pipeline.jobs import ConversionRequest, Reporter
from pipeline.publish import PublishTarget, already_published, onnx_repo_id, publish

TOKEN_ENV = "HF_TOKEN"


@dataclass
class ConvertResult:
    """What a conversion produced: per-variant reports, the card, and where it went."""

    output: Path
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    card_path: Path | None = None
    url: str | None = None
    outcome: str | None = None  # publish outcome: opened, existing, created, ...
    message: str = ""
    failed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "output": str(self.output),
            "reports": self.reports,
            "card": str(self.card_path) if self.card_path else None,
            "url": self.url,
            "outcome": self.outcome,
            "message": self.message,
            "failed": self.failed,
        }


def convert(
    request: ConversionRequest,
    reporter: Reporter,
    *,
    output: Path,
    token: str | None,
    reference: str = "auto",
    force: bool = False,
    progress: bool = False,
) -> ConvertResult:
    """Run one request end to end. Raises MobiusError for bad input and Hub failures;
    a variant that misses its thresholds is reported in `failed` and nothing is published."""
    if request.publish != "none" and token is None:
        raise MobiusError(f"publishing ({request.publish}) needs a Hub token")
    variants = [(ep, dtype) for ep in request.eps for dtype in request.dtypes]
    for ep, dtype in variants:
        execution_provider(ep, dtype)  # refuse unsupported pairs before any download
    reporter.stage("resolve")
    source = resolve_source(
        request.source, revision=request.revision, token=token, progress=progress
    )
    target = PublishTarget(request.publish, request.namespace, request.private, force)
    folders = [model_cards.variant_folder(ep, dtype) for ep, dtype in variants]
    result = ConvertResult(output=output)
    if target.mode != "none":
        if source.repo_id is None or source.revision is None:
            raise MobiusError(f"publishing ({request.publish}) needs a Hub repo id, not a folder")
        done = already_published(source.repo_id, source.revision, folders, target, token)
        if done is not None:
            return _published(result, done, reporter)
    packages = _build_and_validate(source, variants, folders, result, reporter, token, reference)
    reporter.stage("card")
    layout = "repo" if request.publish == "repo" else "pr"
    card, title, description = _card(request, source, packages, result, layout, token)
    result.card_path = output / model_cards.card_path(layout)
    result.card_path.write_text(card)
    reporter.log(f"wrote the card to {result.card_path}")
    result.failed = [f for f, report in result.reports.items() if report["status"] == "failed"]
    if result.failed:
        result.message = f"not publishing: validation failed for {', '.join(result.failed)}"
        reporter.log(f"mobius: {result.message}")
        return result
    if target.mode != "none":
        reporter.stage("publish")
        published = publish(
            source.repo_id, source.revision, packages, card, title, description, target, token
        )
        return _published(result, published, reporter)
    return result


def _build_and_validate(source, variants, folders, result, reporter, token, reference):
    model = source.repo_id or str(source.path)
    packages: dict[str, Path] = {}
    for (ep, dtype), folder in zip(variants, folders, strict=True):
        reporter.stage("build")
        reporter.progress(folder, 0.0, "building")
        out = result.output / folder
        if (out / "mobius.json").is_file():
            shutil.rmtree(out)  # a previous run's package: no stale file may be published
        package = build(model, ep=ep, dtype=dtype, revision=source.revision, token=token)
        packages[folder] = package.save(out, progress=False)
        reporter.stage("validate")
        reporter.progress(folder, 50.0, "validating")
        report = validate(packages[folder], reference=reference, source=source)
        result.reports[folder] = report.as_dict()
        reporter.progress(folder, 100.0, report.status)
        reporter.log(f"{folder}: {report.status}")
    return packages


def _published(result: ConvertResult, published, reporter: Reporter) -> ConvertResult:
    result.url, result.outcome, result.message = (
        published.url,
        published.outcome,
        published.describe(),
    )
    reporter.log(result.message)
    return result


def reproduce_command(request: ConversionRequest, source: Source) -> str:
    """The command line that reproduces this build, pinned to the converted revision."""
    words = ["mobius", "convert", source.repo_id or str(request.source)]
    words += ["--ep", ",".join(request.eps), "--dtype", ",".join(request.dtypes)]
    if source.revision:
        words += ["--revision", source.revision]
    return shlex.join([*words, "--output", "OUT"])


def _card(request, source, packages, result, layout, token) -> tuple[str, str, str]:
    """(card, PR title, PR description) from model_cards; a local folder (no Hub source to
    describe, never published) gets a minimal card."""
    command = reproduce_command(request, source)
    if source.repo_id is not None:
        manifest = json.loads((next(iter(packages.values())) / "mobius.json").read_text())
        info = HfApi(token=token).model_info(source.repo_id, revision=source.revision)
        source_info = model_cards.SourceInfo.from_model_info(
            info, model_type=manifest["model_type"]
        )
        variants = [
            model_cards.VariantInfo.from_package(path, result.reports[folder])
            for folder, path in packages.items()
        ]
        repo_id = None
        if layout == "repo":
            namespace = request.namespace or HfApi(token=token).whoami()["name"]
            repo_id = onnx_repo_id(source.repo_id, namespace)
        card = model_cards.render(
            source_info, variants, mode=layout, command=command, repo_id=repo_id
        )
        title = model_cards.pr_title(source_info, variants)
        return card, title, model_cards.pr_description(source_info, variants, mode=layout)
    names = ", ".join(folder.removeprefix("onnx/") for folder in packages)
    lines = [f"- `{folder}`: {report['status']}" for folder, report in result.reports.items()]
    card = (
        f"---\ntags:\n- onnx\n- mobius\n---\n\n# ONNX variants ({names})\n\n"
        f"Converted by mobius: `{command}`\n\n" + "\n".join(lines) + "\n"
    )
    return card, f"Add ONNX variants ({names}) converted by mobius", "\n".join(lines)


def run(request: ConversionRequest, reporter: Reporter) -> dict[str, Any]:
    """The queue workers' runner: converts in a scratch folder with the service's token
    (`HF_TOKEN`) and returns the JSON-ready result."""
    if request.origin != "cli" and not _is_repo_id(request.source):
        raise MobiusError("only Hub repo ids can be converted by the service")
    with tempfile.TemporaryDirectory(prefix="mobius-job-") as scratch:
        result = convert(
            request, reporter, output=Path(scratch), token=os.environ.get(TOKEN_ENV) or None
        )
        if result.failed:
            raise MobiusError(result.message)
        return result.as_dict()


def _is_repo_id(source: str) -> bool:
    return not Path(source).expanduser().exists() and not source.startswith(("/", ".", "~"))
