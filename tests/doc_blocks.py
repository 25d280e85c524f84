"""Run the fenced code blocks of a Markdown document in order, as a reader would.

Which blocks run is read from the fence's info string:

- `bash` and `python` blocks run, all in one working folder, so a block sees what the blocks
  before it wrote: bash with `-e -o pipefail`, python with this interpreter.
- `bash no-run` / `python no-run`: code a reader runs but a test must not (installs from
  PyPI, servers that run until stopped, minutes of training). They stay highlighted on GitHub.
- `text` (or any other language): shown, never run — usage synopses, output, file trees.
- A fence without an info string is an error, so every block says which of these it is.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

RUNNABLE = ("bash", "python")
NO_RUN = "no-run"
_FENCE = re.compile(r"^(```+|~~~+)\s*(.*)$")


@dataclass(frozen=True)
class Block:
    document: Path
    line: int  # of the opening fence, 1-based
    language: str
    runs: bool
    code: str

    def __str__(self) -> str:
        return f"{self.document.name}:{self.line} ({self.language})"


def blocks(document: Path) -> list[Block]:
    """Every fenced block of `document`; raises ValueError for one without an info string."""
    found, opening, body = [], None, []
    for number, line in enumerate(document.read_text().splitlines(), 1):
        if opening is None:
            match = _FENCE.match(line)
            if match:
                opening, body = (number, match.group(1), match.group(2).split()), []
            continue
        start, fence, words = opening
        if line.strip() == fence:
            if not words:
                raise ValueError(
                    f"{document}:{start}: a fenced block without a language "
                    f"(mark it `text` or `bash {NO_RUN}` if it is not meant to run)"
                )
            runs = words[0] in RUNNABLE and NO_RUN not in words[1:]
            found.append(Block(document, start, words[0], runs, "\n".join(body) + "\n"))
            opening = None
        else:
            body.append(line)
    if opening is not None:
        raise ValueError(f"{document}:{opening[0]}: the fenced block is never closed")
    return found


def environment(**overrides: str) -> dict[str, str]:
    """This process's environment with this interpreter's scripts (`mobius`) first on PATH."""
    env = {**os.environ, **overrides}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run(block: Block, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    """Run one block; its stdout, or an AssertionError with the code and both streams."""
    if block.language == "bash":
        command = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    else:
        command = [sys.executable, "-c", block.code]
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, (
        f"{block} exited {done.returncode}\n{block.code}"
        f"--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    )
    return done.stdout


def run_document(document: Path, cwd: Path, env: dict[str, str]) -> dict[Block, str]:
    """Run the runnable blocks of `document` in order; each one's stdout."""
    return {block: run(block, cwd, env) for block in blocks(document) if block.runs}
