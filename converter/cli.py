"""The `mobius` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from converter.build import DTYPES, EXECUTION_PROVIDERS, build
from converter.errors import MobiusError
from converter.registry import FAMILIES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mobius", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True)

    b = commands.add_parser("build", help="convert a Hub repo or local folder to an ONNX package")
    b.add_argument("--model", required=True, help="Hub repo id or local folder")
    b.add_argument("--output", required=True, type=Path, help="folder to write the package to")
    b.add_argument("--dtype", default="f32", choices=tuple(DTYPES))
    b.add_argument("--ep", default="default", choices=EXECUTION_PROVIDERS)
    b.add_argument("--revision", help="Hub branch, tag or commit (default: main)")
    b.add_argument("--no-progress", action="store_true", help="hide progress bars")
    b.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    listing = commands.add_parser("list", help="list what mobius supports")
    listing.add_argument("what", choices=("models",))
    return parser


def _build(args: argparse.Namespace) -> None:
    package = build(
        args.model,
        ep=args.ep,
        dtype=args.dtype,
        revision=args.revision,
        progress=not args.no_progress,
    )
    out = package.save(args.output, progress=not args.no_progress)
    print(f"wrote {package.config.model_type} ({args.ep}, {args.dtype}) package to {out.resolve()}")


def _list_models() -> None:
    width = max(len(t) for t in FAMILIES)
    for model_type, family in sorted(FAMILIES.items()):
        print(f"{model_type:<{width}}  {family.task:<16} e.g. {', '.join(family.examples)}")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "build":
            _build(args)
        else:
            _list_models()
    except (MobiusError, OSError) as err:
        if args.debug:
            raise
        print(f"mobius: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
