"""sentence-transformers and Optimum, run in a venv of their own (requirements.txt says why).

The venv is built once for a given requirements.txt and main environment, under the user's
cache (~/.cache/mobius-test-venvs/), and kept for later sessions; a fresh machine builds it
inside the test run (10-40 s on 2 cores: it installs the pinned clients and reuses the main
environment's torch, onnxruntime and numpy through --system-site-packages). The tests talk to
one runner.py process in it, a JSON line in and out per call."""

import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).parent
REQUIREMENTS = HERE / "requirements.txt"
# What the venv takes from the main environment as it is: a change here rebuilds it.
SHARED = ("torch", "onnxruntime", "onnx", "numpy", "scipy", "safetensors", "hf-xet", "pip")
CALL_LIMIT_S = 600


def _key() -> str:
    digest = hashlib.sha256(REQUIREMENTS.read_bytes())
    digest.update(f"{sys.base_prefix} {sys.version}".encode())
    for name in SHARED:
        digest.update(f"{name}=={importlib.metadata.version(name)}".encode())
    return digest.hexdigest()[:16]


def _pins() -> dict[str, str]:
    lines = (line.split("#")[0].strip() for line in REQUIREMENTS.read_text().splitlines())
    return dict(line.split("==") for line in lines if line)


class LegacyClients:
    """The runner (runner.py) in the venv of `python`: `clients(COMMAND, **arguments)`."""

    def __init__(self, python: Path) -> None:
        self.python = python
        self._log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (lives until close())
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env |= {
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        self._process = subprocess.Popen(
            [str(python), str(HERE / "runner.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            text=True,
        )

    def __call__(self, command: str, **arguments) -> dict:
        self._process.stdin.write(json.dumps({"command": command, **arguments}) + "\n")
        self._process.stdin.flush()
        watchdog = threading.Timer(CALL_LIMIT_S, self._process.kill)
        watchdog.start()
        try:
            line = self._process.stdout.readline()
        finally:
            watchdog.cancel()
        reply = json.loads(line) if line else {"error": "the runner exited"}
        if "error" in reply:
            raise RuntimeError(f"{command} failed:\n{reply['error']}\nstderr:\n{self._stderr()}")
        return reply["result"]

    def _stderr(self) -> str:
        self._log.seek(0)
        return self._log.read()[-6000:]

    def close(self) -> None:
        self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()


def _run(args: list[str]) -> None:
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-6000:]}")


def build_legacy_clients(cache: Path | None = None) -> LegacyClients:
    """The venv's runner; the venv is built under a lock unless a complete one exists."""
    cache = cache or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = cache / "mobius-test-venvs"
    folder = root / f"legacy-clients-{_key()}"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "legacy-clients.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "complete").exists():
            return LegacyClients(folder / "bin" / "python")
        shutil.rmtree(folder, ignore_errors=True)
        # No pip of its own: the main environment's pip installs into it (a venv's own
        # setuptools would shadow the newer one torch needs).
        _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(folder)])
        python = folder / "bin" / "python"
        # --no-compile: byte-compiling all of transformers took longer than the download; the
        # few modules the runner imports are compiled on first import instead.
        install = ["install", "--quiet", "--no-compile", "-r", str(REQUIREMENTS)]
        _run([str(python), "-m", "pip", *install])
        clients = LegacyClients(python)
        found = clients("versions")
        wrong = {k for k, v in _pins().items() if k in found and found[k].split("+")[0] != v}
        inside = Path(found["transformers_file"]).resolve().is_relative_to(folder.resolve())
        if wrong or not inside:
            clients.close()
            raise RuntimeError(f"the legacy-clients venv does not hold its pins: {found}")
        (folder / "complete").write_text(json.dumps(found))
        return clients
