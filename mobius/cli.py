"""`mobius`: the converter's commands plus those of the layers built on it."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import converter.cli
import pipeline.cli


def main(argv: Sequence[str] | None = None) -> int:
    return converter.cli.run(argv, [converter.cli.register, pipeline.cli.register])


if __name__ == "__main__":
    sys.exit(main())
