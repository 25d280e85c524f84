"""The conversion job both front doors run: resolve -> build each variant -> validate ->
card -> publish. `mobius convert` calls `convert` directly; queue workers call `run`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi

import model_cards
from converter import hub_retry
from converter.build import build
from converter.errors import MobiusError
from converter.package import transformers_js
from converter.repo_files import is_repo_id
from converter.source import Source, resolve_source
from converter.validate import PUBLISHABLE, summarize, validate
from pipeline.jobs import ConversionRequest, Reporter
from pipeline.publish import (
    Destination,
    PublishTarget,
    already_published,
    built_with,
    destination,
    publish,
)

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
    reporter.stage("resolve")
    source = resolve_source(
        request.source, revision=request.revision, token=token, progress=progress
    )
    target = PublishTarget(request.publish, request.namespace, request.private, force)
    folders = [model_cards.variant_folder(ep, dtype) for ep, dtype in variants]
    result = ConvertResult(output=output)
    where = Destination(target, "")
    if target.mode != "none":
        if source.repo_id is None or source.revision is None:
            raise MobiusError(f"publishing ({request.publish}) needs a Hub repo id, not a folder")
        where = destination(source.repo_id, target, token)
        if where.note:
            reporter.log(where.note)
        built = built_with(request.build_options())
        done = already_published(source.repo_id, source.revision, folders, where, token, built)
        if done is not None:
            return _published(result, done, where, reporter)
    packages = _build_and_validate(
        source, variants, folders, result, reporter, token, reference, progress, request
    )
    mode = "local" if where.mode == "none" else where.mode
    # a PR leaves the source's own config and tokenizer at its root as they are
    layout = transformers_js.write_layout(packages.values(), output, root_files=mode != "pr")
    if layout:
        reporter.log(f"wrote the Transformers.js files ({', '.join(layout)})")
    reporter.stage("card")
    card, title, description = _card(request, source, packages, result, mode, where, token)
    result.card_path = output / model_cards.card_path(mode)
    result.card_path.write_text(card)
    reporter.log(f"wrote the card ({model_cards.card_path(mode)})")
    result.failed = [f for f, r in result.reports.items() if r["status"] not in PUBLISHABLE]
    if result.failed:
        what = ", ".join(f"{f} ({result.reports[f]['status']})" for f in result.failed)
        result.message = f"not publishing: validation did not pass for {what}"
        reporter.log(f"mobius: {result.message}")
        return result
    if target.mode != "none":
        reporter.stage("publish")
        published = publish(
            source.repo_id,
            source.revision,
            packages,
            card,
            title,
            description,
            where,
            token,
            layout_files={path: output / path for path in layout},
        )
        return _published(result, published, where, reporter)
    return result


def _build_and_validate(
    source, variants, folders, result, reporter, token, reference, progress, request
):
    model = source.repo_id or str(source.path)
    packages: dict[str, Path] = {}
    for (ep, dtype), folder in zip(variants, folders, strict=True):
        reporter.stage("build")
        reporter.progress(folder, 0.0, "building")
        out = result.output / folder
        if (out / "mobius.json").is_file():
            shutil.rmtree(out)  # a previous run's package: no stale file may be published
        package = build(
            model,
            ep=ep,
            dtype=dtype,
            revision=source.revision,
            token=token,
            progress=progress,
            **request.build_options(),
        )
        packages[folder] = package.save(out, progress=False)
        reporter.stage("validate")
        reporter.progress(folder, 50.0, "validating")
        report = validate(packages[folder], reference=reference, source=source)
        result.reports[folder] = report.as_dict()
        reporter.progress(folder, 100.0, summarize(report.as_dict()))
    return packages


def _published(result: ConvertResult, published, where: Destination, reporter) -> ConvertResult:
    result.url, result.outcome = published.url, published.outcome
    result.message = published.describe() + (f" ({where.note})" if where.note else "")
    reporter.log(result.message)
    return result


def reproduce_command(request: ConversionRequest, source: Source) -> str:
    """The command line that reproduces this build, pinned to the converted revision."""
    words = ["mobius", "convert", source.repo_id or str(request.source)]
    words += ["--ep", ",".join(request.eps), "--dtype", ",".join(request.dtypes)]
    if source.revision:
        words += ["--revision", source.revision]
    if request.features:
        words += ["--features", ",".join(request.features)]
    if request.max_seq_len is not None:
        words += ["--max-seq-len", str(request.max_seq_len)]
    if request.release:
        words.append("--release")
    return shlex.join([*words, "--output", "OUT"])


def _card(request, source, packages, result, mode, where: Destination, token):
    """(card, PR title, PR description) from model_cards; `mode` is pr, repo or local."""
    command = reproduce_command(request, source)
    manifest = json.loads((next(iter(packages.values())) / "mobius.json").read_text())
    variants = [
        model_cards.VariantInfo.from_package(path, result.reports[folder])
        for folder, path in packages.items()
    ]
    if source.repo_id is None:
        info = model_cards.SourceInfo.local(source.path, model_type=manifest["model_type"])
    else:
        api = HfApi(token=token)
        hub = hub_retry.call(
            "look-up", lambda: api.model_info(source.repo_id, revision=source.revision)
        )
        info = model_cards.SourceInfo.from_model_info(
            hub, model_type=manifest["model_type"], ref=request.revision
        )
    repo_id = where.repo_id if mode == "repo" else None
    card = model_cards.render(
        info, variants, mode=mode, command=command, repo_id=repo_id, note=where.note
    )
    title = model_cards.pr_title(info, variants)
    return card, title, model_cards.pr_description(info, variants, mode=mode)


def run(request: ConversionRequest, reporter: Reporter) -> dict[str, Any]:
    """The queue workers' runner: converts in the attempt's `reporter.workdir` with the
    service's token (`HF_TOKEN`). Returns the JSON-ready result without worker paths; a request
    that publishes nothing (download only) keeps `archive`, a zip of the output folder (packages,
    card, Transformers.js files) in `reporter.results`."""
    if request.origin != "cli" and not is_repo_id(request.source):
        raise MobiusError("only Hub repo ids can be converted by the service")
    output = Path(reporter.workdir)  # type: ignore[attr-defined]
    result = convert(request, reporter, output=output, token=os.environ.get(TOKEN_ENV) or None)
    if result.failed:
        raise MobiusError(result.message)
    answer = {k: v for k, v in result.as_dict().items() if k not in ("output", "card")}
    for report in answer["reports"].values():
        report.pop("package", None)  # a folder in the attempt's workdir, gone by now
    if request.publish == "none":
        results = Path(reporter.results)  # type: ignore[attr-defined]
        results.mkdir(parents=True, exist_ok=True)
        name = f"{request.source.replace('/', '--')}-onnx"
        # the packages and card, and the Transformers.js files at the root when there are any
        answer["archive"] = shutil.make_archive(str(results / name), "zip", output, ".")
    return answer
