"""The converter's commands (`build`, `build-gguf`, `validate`, `list`) and the shared
command runner.

Each layer registers its own subcommands; `mobius/cli.py` composes them all into the
`mobius` command, so the converter never imports the layers above it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from converter.build import build
from converter.errors import MobiusError
from converter.execution_providers import DTYPES, EXECUTION_PROVIDERS
from converter.features import FEATURES
from converter.quantize import DEFAULT_METHOD, METHODS
from converter.registry import coverage
from converter.sizes import human_size
from converter.tasks import TASKS

Registrar = Callable[[argparse._SubParsersAction], None]


def register(commands: argparse._SubParsersAction) -> None:
    """Add `build`, `build-gguf`, `validate` and `list`; each sets `handler`, which returns an
    exit code."""
    b = commands.add_parser("build", help="convert a Hub repo or local folder to an ONNX package")
    b.add_argument("--model", required=True, help="Hub repo id or local folder")
    _target_options(b, "int4 quantization block along the input dimension")
    b.add_argument("--int4-asymmetric", action="store_true", help="int4 with per-block zero points")
    b.add_argument(
        "--int4-method",
        default=DEFAULT_METHOD,
        choices=METHODS,
        help="int4 block scales: round-to-nearest, or a per-block search for the scale that "
        f"reconstructs each block best (slower; no calibration data); default {DEFAULT_METHOD}",
    )
    b.add_argument(
        "--task",
        choices=sorted(TASKS),
        help="the head to export (default: the one config.json's architectures names)",
    )
    b.add_argument(
        "--features",
        action="append",
        metavar="A,B",
        help=f"build features, comma-separated or repeated: {', '.join(sorted(FEATURES))}",
    )
    b.add_argument(
        "--max-seq-len",
        type=int,
        metavar="N",
        help="the static-cache feature's cache size: prompt and generated tokens per row",
    )
    b.add_argument("--revision", help="Hub branch, tag or commit (default: main)")
    _save_options(b)
    b.set_defaults(handler=_build)

    g = commands.add_parser(
        "build-gguf", help="convert a GGUF file (llama.cpp's format) to an ONNX package"
    )
    g.add_argument("file", type=Path, help="the .gguf file")
    _target_options(g, "int4 block (32 keeps Q4_0 blocks as they are; others requantize them)")
    _save_options(g)
    g.set_defaults(handler=_build_gguf)

    v = commands.add_parser("validate", help="check a package in onnxruntime against a reference")
    v.add_argument("package", type=Path, help="a folder written by `mobius build`")
    v.add_argument("--json", action="store_true", help="print the report as JSON")
    v.add_argument("--steps", type=_at_least_one, help="greedy decode steps (default 8)")
    v.add_argument(
        "--reference",
        default="auto",
        choices=("auto", "transformers", "default"),
        help="transformers on the same checkpoint, or the default f32 variant built on the fly",
    )
    v.add_argument(
        "--source",
        metavar="ID_OR_DIR",
        help="the checkpoint the package was built from (default: the one mobius.json records)",
    )
    v.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    v.set_defaults(handler=_validate)

    listing = commands.add_parser("list", help="list what mobius supports")
    listing.add_argument("what", choices=("models",))
    listing.add_argument("--json", action="store_true", help="print the rows as JSON")
    listing.set_defaults(handler=_list_models)


def _build(args: argparse.Namespace) -> int:
    package = build(
        args.model,
        ep=args.ep,
        dtype=args.dtype,
        revision=args.revision,
        progress=not args.no_progress,
        int4_block_size=args.int4_block_size,
        int4_symmetric=not args.int4_asymmetric,
        int4_head_bits=_head_bits(args),
        int4_method=args.int4_method,
        task=args.task,
        features=args.features,
        release=args.release,
        max_seq_len=args.max_seq_len,
    )
    return _saved(package, args)


def _target_options(parser: argparse.ArgumentParser, block_help: str) -> None:
    """What `build` and `build-gguf` make and where it goes."""
    parser.add_argument("--output", required=True, type=Path, help="folder to write the package to")
    parser.add_argument("--dtype", default="f32", choices=tuple(DTYPES))
    parser.add_argument("--ep", default="default", choices=tuple(EXECUTION_PROVIDERS))
    parser.add_argument(
        "--int4-block-size", type=int, default=32, choices=(16, 32, 64, 128), help=block_help
    )
    parser.add_argument(
        "--int4-head-bits",
        default="8",
        choices=("8", "4", "float"),
        help="int4 builds: bits of the LM head and the token embedding (where the EP can "
        "gather quantized rows; a tied pair is stored once); default 8, in blocks of 128",
    )


def _save_options(parser: argparse.ArgumentParser) -> None:
    """How `build` and `build-gguf` save the package and report it."""
    parser.add_argument(
        "--release",
        action="store_true",
        help="save the graphs without debug and provenance metadata (doc strings, node origins)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    parser.add_argument(
        "--json", action="store_true", help="print the package's path and manifest as JSON"
    )
    # SUPPRESS as default: `mobius --debug build ...` must not be reset to False here.
    parser.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )


def _head_bits(args: argparse.Namespace) -> int | None:
    return None if args.int4_head_bits == "float" else int(args.int4_head_bits)


def _build_gguf(args: argparse.Namespace) -> int:
    from converter.gguf.build_gguf import build_gguf  # imports gguf

    package = build_gguf(
        args.file,
        ep=args.ep,
        dtype=args.dtype,
        int4_block_size=args.int4_block_size,
        int4_head_bits=_head_bits(args),
        release=args.release,
    )
    return _saved(package, args)


def _saved(package, args: argparse.Namespace) -> int:
    """Save the package where `args` say and print what was written."""
    out = package.save(args.output, progress=not args.no_progress).resolve()
    if args.json:
        manifest = json.loads((out / "mobius.json").read_text())
        print(json.dumps({"package": str(out), **manifest}, indent=2))
    else:
        print(f"wrote {package.config.model_type} ({args.ep}, {args.dtype}) package to {out}")
        if args.release:
            print(f"release: {human_size(package.stripped)} of debug metadata left out")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from converter.validate import (  # imports onnxruntime
        DECODE_STEPS,
        PUBLISHABLE,
        format_report,
        validate,
    )

    steps = DECODE_STEPS if args.steps is None else args.steps
    report = validate(args.package, reference=args.reference, steps=steps, source=args.source)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(format_report(report))
    return 0 if report.status in PUBLISHABLE else 1


def _list_models(args: argparse.Namespace) -> int:
    rows = coverage()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(row["model_type"]) for row in rows)
    for row in rows:
        if row["status"] == "supported":
            examples = f"e.g. {', '.join(row['examples'])}" if row["examples"] else ""
            about = f"{', '.join(row['tasks']):<16} {examples}"
        else:
            about = f"not yet ({row['scope']}): {row['reason']}"
        print(f"{row['model_type']:<{width}}  {row['category']:<8} {about}".rstrip())
    return 0


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run(argv: Sequence[str] | None, registrars: Sequence[Registrar]) -> int:
    """Parse with every layer's subcommands and run one: a one-line error, exit 1, on bad
    input; the traceback only with --debug."""
    parser = argparse.ArgumentParser(prog="mobius", description="Hugging Face models to ONNX.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True)
    for add_commands in registrars:
        add_commands(commands)
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (MobiusError, OSError) as err:
        if args.debug:
            raise
        print(f"mobius: error: {err}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """The converter's commands alone (the full `mobius` command is mobius.cli.main)."""
    return run(argv, [register])


if __name__ == "__main__":
    sys.exit(main())
