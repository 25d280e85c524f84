"""`mobius`: the converter's commands plus those of the layers built on it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import bot.cli
import converter.cli
import converter.errors
import pipeline.cli
import space_app.cli

# The front doors' pyproject extras and the modules each brings, checked before a command starts.
EXTRAS = {"bot": ("fastapi", "uvicorn", "github3"), "space": ("gradio",)}


def main(argv: Sequence[str] | None = None) -> int:
    registrars = [
        converter.cli.register,
        pipeline.cli.register,
        _needing_extra("space", space_app.cli.register),
        _needing_extra("bot", bot.cli.register),
    ]
    return converter.cli.run(argv, registrars)


def _needing_extra(
    extra: str, register: Callable[[argparse._SubParsersAction], argparse.ArgumentParser]
) -> converter.cli.Registrar:
    """`register`, with its command refused in one line when the extra is not installed."""

    def add(commands: argparse._SubParsersAction) -> None:
        parser = register(commands)
        handler = parser.get_default("handler")

        def checked(args: argparse.Namespace) -> int:
            converter.errors.require_extra(extra, EXTRAS[extra], needed_by=f"mobius {args.command}")
            return handler(args)

        parser.set_defaults(handler=checked)

    return add


if __name__ == "__main__":
    sys.exit(main())
