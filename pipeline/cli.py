"""`mobius convert`: build every (ep, dtype) variant, validate each, write the card, publish.

The output folder mirrors the Hub layout: `DIR/onnx/<ep>-<dtype>/` per variant, the card at
`DIR/onnx/README.md` (PR layout, also used with `--publish none`) or `DIR/README.md` (repo
layout). Wired into the `mobius` command by `mobius/cli.py` through `register`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
from pathlib import Path

from huggingface_hub import HfApi

import model_cards
from converter.build import build
from converter.errors import MobiusError
from converter.execution_providers import execution_provider
from converter.source import Source, resolve_source
from converter.validate import ValidationReport, validate
from pipeline.publish import MODES, PublishTarget, already_published, onnx_repo_id, publish


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `convert` subcommand to the `mobius` parser."""
    c = subparsers.add_parser(
        "convert", help="build variants, validate them, write the card, optionally publish"
    )
    c.add_argument("model", metavar="ID_OR_DIR", help="Hub repo id or local folder")
    c.add_argument("--ep", default="cpu", type=_csv, help="execution providers, e.g. cpu,cuda")
    c.add_argument("--dtype", default="f32", type=_csv, help="dtypes, e.g. f32,int4")
    c.add_argument("--output", required=True, type=Path, help="folder to write everything to")
    c.add_argument("--revision", help="Hub branch, tag or commit (default: main)")
    c.add_argument("--publish", choices=MODES, default="none", help="deliver to the Hub")
    c.add_argument("--namespace", help="with --publish repo: user or org (default: yours)")
    c.add_argument("--private", action="store_true", help="with --publish repo: a private repo")
    c.add_argument(
        "--force", action="store_true", help="open a new PR even if one was closed before"
    )
    c.add_argument(
        "--token-env",
        default="HF_TOKEN",
        metavar="VAR",
        help="environment variable holding the Hub token (default: HF_TOKEN)",
    )
    c.add_argument(
        "--reference",
        default="auto",
        choices=("auto", "transformers", "default"),
        help="validate against transformers, or the default f32 variant built on the fly",
    )
    c.add_argument("--no-progress", action="store_true", help="hide progress bars")
    c.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    c.set_defaults(handler=run)
    return c


def run(args: argparse.Namespace) -> int:
    """Returns 1 when a variant failed validation (then nothing is published); raises
    MobiusError (PublishError included) for bad input and Hub failures."""
    progress = not args.no_progress
    token = os.environ.get(args.token_env) or None
    if args.publish != "none" and token is None:
        raise MobiusError(f"--publish {args.publish} needs a Hub token in ${args.token_env}")
    variants = [(ep, dtype) for ep in args.ep for dtype in args.dtype]
    for ep, dtype in variants:
        execution_provider(ep, dtype)  # refuse unsupported pairs before any download
    source = resolve_source(args.model, revision=args.revision, token=token, progress=progress)
    target = PublishTarget(args.publish, args.namespace, args.private, args.force)
    folders = [model_cards.variant_folder(ep, dtype) for ep, dtype in variants]
    if target.mode != "none":
        if source.repo_id is None or source.revision is None or token is None:
            raise MobiusError(f"--publish {args.publish} needs a Hub repo id, not a local folder")
        done = already_published(source.repo_id, source.revision, folders, target, token)
        if done is not None:
            print(done.describe())
            return 0
    model = source.repo_id or str(source.path)
    packages: dict[str, Path] = {}
    reports: dict[str, ValidationReport] = {}
    for (ep, dtype), folder in zip(variants, folders, strict=True):
        out = args.output / folder
        if (out / "mobius.json").is_file():
            shutil.rmtree(out)  # a previous run's package: no stale file may be published
        package = build(
            model, ep=ep, dtype=dtype, revision=source.revision, token=token, progress=progress
        )
        packages[folder] = package.save(out, progress=progress)
        reports[folder] = validate(packages[folder], reference=args.reference, source=source)
        print(f"{folder}: {reports[folder].status}")
    layout = "repo" if args.publish == "repo" else "pr"
    card, title, description = _card(args, source, packages, reports, layout, token)
    card_file = args.output / model_cards.card_path(layout)
    card_file.write_text(card)
    print(f"wrote the card to {card_file}")
    failed = [folder for folder, report in reports.items() if report.status == "failed"]
    if failed:
        print(f"mobius: not publishing: validation failed for {', '.join(failed)}")
        return 1
    if target.mode != "none":
        assert source.repo_id and source.revision and token  # checked above
        published = publish(
            source.repo_id, source.revision, packages, card, title, description, target, token
        )
        print(published.describe())
    return 0


def _csv(text: str) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError("give at least one value")
    return list(dict.fromkeys(items))


def _command(args: argparse.Namespace, source: Source) -> str:
    """The command line that reproduces this build, pinned to the converted revision."""
    words = ["mobius", "convert", source.repo_id or str(args.model)]
    words += ["--ep", ",".join(args.ep), "--dtype", ",".join(args.dtype)]
    if source.revision:
        words += ["--revision", source.revision]
    return shlex.join([*words, "--output", str(args.output)])


def _card(
    args: argparse.Namespace,
    source: Source,
    packages: dict[str, Path],
    reports: dict[str, ValidationReport],
    layout: str,
    token: str | None,
) -> tuple[str, str, str]:
    """(card, PR title, PR description) from model_cards; a local folder (no Hub source to
    describe, never published) gets a minimal placeholder card."""
    if source.repo_id is not None:
        manifest = json.loads((next(iter(packages.values())) / "mobius.json").read_text())
        info = HfApi(token=token).model_info(source.repo_id, revision=source.revision)
        source_info = model_cards.SourceInfo.from_model_info(
            info, model_type=manifest["model_type"]
        )
        variants = [
            model_cards.VariantInfo.from_package(path, reports[folder].as_dict())
            for folder, path in packages.items()
        ]
        repo_id = None
        if layout == "repo":
            namespace = args.namespace or HfApi(token=token).whoami()["name"]
            repo_id = onnx_repo_id(source.repo_id, namespace)
        card = model_cards.render(
            source_info, variants, mode=layout, command=_command(args, source), repo_id=repo_id
        )
        title = model_cards.pr_title(source_info, variants)
        return card, title, model_cards.pr_description(source_info, variants, mode=layout)
    names = ", ".join(folder.removeprefix("onnx/") for folder in packages)
    lines = [f"- `{folder}`: {report.status}" for folder, report in reports.items()]
    card = (
        f"---\ntags:\n- onnx\n- mobius\n---\n\n# ONNX variants ({names})\n\n"
        f"Converted by mobius: `{_command(args, source)}`\n\n" + "\n".join(lines) + "\n"
    )
    title = f"Add ONNX variants ({names}) converted by mobius"
    return card, title, "\n".join(lines)
