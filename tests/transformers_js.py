"""Transformers.js for the tests: `@huggingface/transformers` as pinned by tests/js/package.json
and its lockfile, installed once with npm into tests/js/node_modules (ignored by git; a fresh
clone installs it on first use), and run under Node through tests/js/run.mjs, one JSON request
per process.

`npm ci --ignore-scripts`: onnxruntime-node's install script would fetch extra execution
providers from a host outside the npm registry; its CPU binaries ship in the package itself.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

JS_DIR = Path(__file__).resolve().parent / "js"
MODULES = JS_DIR / "node_modules"
STAMP = MODULES / ".mobius-lockfile-sha256"  # the lockfile that node_modules was installed from
LOCK = JS_DIR / ".npm-install.lock"
RUNNER = JS_DIR / "run.mjs"


class TransformersJs:
    """Runs requests (see tests/js/run.mjs) through Node; `install()` gets one."""

    def __init__(self, node: str) -> None:
        self.node = node

    @classmethod
    def install(cls) -> TransformersJs:
        """npm-install the pinned packages unless node_modules already holds them (a file lock
        keeps two test sessions from installing at once)."""
        node, npm = shutil.which("node"), shutil.which("npm")
        if node is None or npm is None:
            raise RuntimeError("the Transformers.js tests need Node 20 and npm on PATH")
        wanted = hashlib.sha256((JS_DIR / "package-lock.json").read_bytes()).hexdigest()
        with LOCK.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (STAMP.is_file() and STAMP.read_text() == wanted):
                command = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
                env = {**os.environ, "npm_config_update_notifier": "false"}
                done = subprocess.run(
                    command, cwd=JS_DIR, env=env, capture_output=True, text=True, timeout=900
                )
                if done.returncode != 0:
                    raise RuntimeError(f"npm ci failed:\n{done.stdout}\n{done.stderr}")
                STAMP.write_text(wanted)
        return cls(node)

    def run(self, request: dict[str, Any], *, timeout: float = 300) -> list[Any]:
        """The results of the request's calls, one per call; a failing run raises with Node's
        error output."""
        done = subprocess.run(
            [self.node, str(RUNNER)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise AssertionError(f"Transformers.js failed:\n{done.stderr[-6000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])["results"]
