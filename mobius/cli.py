"""`mobius`: the converter's commands plus those of the layers built on it."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import bot.cli
import converter.cli
import pipeline.cli
import space_app.cli


def main(argv: Sequence[str] | None = None) -> int:
    registrars = [
        converter.cli.register,
        pipeline.cli.register,
        space_app.cli.register,
        bot.cli.register,
    ]
    return converter.cli.run(argv, registrars)


if __name__ == "__main__":
    sys.exit(main())
