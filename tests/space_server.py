"""Helpers for the Space's tests: run the app on 127.0.0.1 around a real queue and worker, sign a
visitor in, seed the tiny model on the loopback Hub.

Off a Space, gradio mocks "Sign in with Hugging Face": `/login/huggingface` puts one fixed
identity in the session cookie. `signing_in_as` chooses that identity (a user of the loopback Hub
and their token); `session_headers` signs in and returns the cookie for `gradio_client`.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # before gradio is imported: no network
os.environ.setdefault("GRADIO_TELEMETRY_ENABLED", "False")

import gradio as gr
import gradio.oauth
import httpx
import pytest

from pipeline.jobs import JobQueue, Limits
from space_app.app import create_app
from tests.checkpoints import TINY_LLAMA


@contextmanager
def running_space(
    data_dir: Path, *, service_token: str | None, user: str, user_token: str
) -> Iterator[tuple[str, JobQueue]]:
    """The app (with sign-in) around a JobQueue in `data_dir` with an in-process worker running
    the real runner; `service_token` is its HF_TOKEN (None: none), visitors sign in as `user`.
    Yields the app's URL and the queue."""
    with pytest.MonkeyPatch.context() as mp, signing_in_as(user, user_token):
        if service_token:
            mp.setenv("HF_TOKEN", service_token)
        else:
            mp.delenv("HF_TOKEN", raising=False)
        mp.delenv("SPACE_ID", raising=False)
        mp.setenv("MOBIUS_SPACE_USER", "local-operator")
        queue = JobQueue(data_dir, limits=Limits(rate=None))
        with queue.worker(), serving(create_app(queue, login=True)) as url:
            yield url, queue


@contextmanager
def serving(demo: gr.Blocks) -> Iterator[str]:
    """`demo` on a free loopback port; yields its URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _, url, _ = demo.launch(
        server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True
    )
    try:
        yield url.rstrip("/")
    finally:
        demo.close()


@contextmanager
def signing_in_as(user: str, token: str) -> Iterator[None]:
    """Apps launched inside the block sign visitors in as `user` holding the OAuth `token`."""
    info = {
        "access_token": token,
        "token_type": "bearer",
        "scope": "openid profile read-repos",
        "expires_at": int(time.time()) + 3600,
        "userinfo": {
            "sub": uuid.uuid4().hex,
            "name": user,
            "preferred_username": user,
            "profile": f"https://huggingface.co/{user}",
            "picture": "",
        },
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: info)
        yield


def session_headers(url: str) -> dict[str, str]:
    """Sign in on the app at `url`; the headers that carry the session (its cookie is marked
    Secure, so it is sent by hand over http)."""
    response = httpx.get(f"{url}/login/callback", follow_redirects=False)
    cookie = response.cookies.get("session")
    assert cookie, f"no session cookie from {url}/login/callback: {response.status_code}"
    return {"Cookie": f"session={cookie}"}


def seed(fake_hub, **access) -> str:
    """A fresh repo holding the tiny Llama; `access`: `add_repo`'s private, gated, readers."""
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-llama"
    files = {p.name: p.read_bytes() for p in TINY_LLAMA.iterdir()}
    fake_hub.add_repo(repo_id, files, **access)
    return repo_id
