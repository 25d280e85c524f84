"""Shared fixtures. The Hub environment is set here, before anything imports huggingface_hub,
which reads HF_ENDPOINT and HF_HOME once at import time."""

import atexit
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator

import pytest

for _name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_OIDC_RESOURCE"):
    os.environ.pop(_name, None)
for _name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE", "HF_XET_CACHE"):
    os.environ.pop(_name, None)
with socket.socket() as _sock:
    _sock.bind(("127.0.0.1", 0))
    HUB_PORT = _sock.getsockname()[1]
os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{HUB_PORT}"
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="mobius-hf-home-")
atexit.register(shutil.rmtree, os.environ["HF_HOME"], ignore_errors=True)
os.environ["HF_HUB_DISABLE_XET"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
# mobius's Hub retries (converter/hub_retry.py) wait milliseconds here, not seconds
os.environ["MOBIUS_HUB_BACKOFF_S"] = "0.01"
os.environ["MOBIUS_HUB_MAX_WAIT_S"] = "0.05"

from tests.hub_server import FakeHub  # noqa: E402
from tests.legacy_clients import LegacyClients, build_legacy_clients  # noqa: E402
from tests.transformers_js import TransformersJs  # noqa: E402


@pytest.fixture(scope="session")
def fake_hub() -> Iterator[FakeHub]:
    """A loopback Hub at HF_ENDPOINT, shared by the session: give each test its own repo ids."""
    with FakeHub(HUB_PORT) as hub:
        yield hub


@pytest.fixture(scope="session")
def legacy_clients() -> Iterator[LegacyClients]:
    """sentence-transformers 5 and Optimum (transformers 4.57) in their own venv, built once."""
    clients = build_legacy_clients()
    yield clients
    clients.close()


@pytest.fixture(scope="session")
def transformers_js() -> TransformersJs:
    """Transformers.js under Node, installed once (tests/transformers_js.py)."""
    return TransformersJs.install()
