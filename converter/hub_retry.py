"""One retry policy for the Hub steps of a job: the download, the look-ups, the preupload, the
LFS upload, the commit.

A step is retried when it failed transiently: HTTP 408, 429, 500, 502, 503 or 504, a timeout, a
refused or dropped connection; never on any other answer (401, 403, 404, 409, 412 ...). Waits
double from `backoff_s` up to `max_wait_s`, each drawn between half and all of that (jitter), or
what a 429's `Retry-After` asks when that is longer; a step stops after `attempts` tries or when
the next wait would pass `budget_s` since it began, and raises `HubUnavailable`, one line naming
the step. A step that may have succeeded on the Hub although its answer was lost (a commit) gets
`landed`: asked before each retry, it returns the result when the step is already done.

The huggingface_hub client retries some requests itself first (see docs/jobs.md, "Hub faults");
its requests had no timeout except downloads' own: `call` gives them `timeout_s`.
Each setting is read from the environment when a step starts (`MOBIUS_HUB_*`, `RetryPolicy`).
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TypeVar

import httpx2
from huggingface_hub import set_client_factory
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.utils._http import default_client_factory  # the client's own, with its hooks

from converter.errors import ConfigError, MobiusError

TOKEN_LIKE = re.compile(r"hf_[A-Za-z0-9]{8,}")  # a Hub token, as a server message may echo it
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
TRANSIENT_ERRORS = (httpx2.TimeoutException, httpx2.NetworkError, httpx2.RemoteProtocolError)
T = TypeVar("T")
log = logging.getLogger("mobius.hub")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4  # MOBIUS_HUB_ATTEMPTS: tries per step, the first included
    backoff_s: float = 2.0  # MOBIUS_HUB_BACKOFF_S: the first wait; doubled after each retry
    max_wait_s: float = 30.0  # MOBIUS_HUB_MAX_WAIT_S
    budget_s: float = 600.0  # MOBIUS_HUB_BUDGET_S: no retry starts later than this into a step
    timeout_s: float = 60.0  # MOBIUS_HUB_TIMEOUT_S: per connect, read or write of a request

    @classmethod
    def from_env(cls) -> RetryPolicy:
        values: dict[str, float] = {}
        for field in fields(cls):
            name = f"MOBIUS_HUB_{field.name.upper()}"
            text = os.environ.get(name)
            if text is None:
                continue
            try:
                value = int(text) if field.name == "attempts" else float(text)
            except ValueError:
                value = 0
            if not 0 < value < float("inf"):
                what = "a whole number of at least 1" if field.name == "attempts" else "seconds > 0"
                raise ConfigError(f"{name}={text!r} is not {what}")
            values[field.name] = value
        return cls(**values)  # type: ignore[arg-type]

    def wait(self, retry: int, retry_after: float | None) -> float:
        """Seconds before retry number `retry` (1, 2, ...)."""
        ceiling = min(self.max_wait_s, self.backoff_s * 2 ** (retry - 1))
        return max(random.uniform(ceiling / 2, ceiling), retry_after or 0.0)


class HubUnavailable(MobiusError):
    """A step failed transiently `attempts` times (or its time budget ran out)."""

    def __init__(self, step: str, attempts: int, error: BaseException, note: str = "") -> None:
        times = "once" if attempts == 1 else f"{attempts} times"
        super().__init__(f"the {step} failed {times}: {describe(error)}{note}")
        self.step, self.attempts, self.error = step, attempts, error


def call(
    step: str | Callable[[BaseException], str],
    run: Callable[[], T],
    *,
    landed: Callable[[], T | None] | None = None,
) -> T:
    """`run()`, retried under the policy; see the module doc. `step` names it in messages, or
    names the part that failed, given the error."""
    policy = RetryPolicy.from_env()
    use_timeout(policy.timeout_s)
    start, attempt = time.monotonic(), 1
    while True:
        try:
            if attempt > 1 and landed is not None and (done := landed()) is not None:
                log.warning("the %s had succeeded on the Hub; not repeating it", step)
                return done
            return run()
        except Exception as err:
            if not transient(err):
                raise
            failure = err
        name = step if isinstance(step, str) else step(failure)
        if attempt == policy.attempts:
            raise HubUnavailable(name, attempt, failure) from failure
        retry_after = _retry_after(failure)
        wait = policy.wait(attempt, retry_after)
        if time.monotonic() - start + wait > policy.budget_s:
            asked = f"the Hub asked to wait {retry_after:g} s; " if retry_after else ""
            note = f" ({asked}a retry would pass the {policy.budget_s:g} s budget)"
            raise HubUnavailable(name, attempt, failure, note) from failure
        log.warning(
            "the %s failed: %s; retry %d of %d in %.2f s",
            name,
            describe(failure),
            attempt,
            policy.attempts - 1,
            wait,
        )
        time.sleep(wait)
        attempt += 1


def transient(err: BaseException) -> bool:
    """Worth retrying: the first HTTP or connection error in the `__cause__` chain says so (the
    client wraps them: LFS uploads in RuntimeError, failed file lookups in
    LocalEntryNotFoundError)."""
    cause = _root(err)
    if isinstance(cause, HfHubHTTPError):
        return cause.response.status_code in TRANSIENT_STATUS
    return isinstance(cause, TRANSIENT_ERRORS)


def describe(err: BaseException) -> str:
    """The failure in a few words: the status and the Hub's message (tokens masked), or what the
    connection did."""
    cause = _root(err)
    if isinstance(cause, HfHubHTTPError):
        status = cause.response.status_code
        detail = f": {' '.join(cause.server_message.split())}" if cause.server_message else ""
        return TOKEN_LIKE.sub("hf_***", f"the Hub answered HTTP {status}{detail}")
    if isinstance(cause, httpx2.TimeoutException):
        return f"no answer in time ({type(cause).__name__})"
    if isinstance(cause, httpx2.ConnectError):
        return "cannot reach the Hub (ConnectError)"
    if isinstance(cause, (httpx2.NetworkError, httpx2.RemoteProtocolError)):
        return f"the connection was dropped ({type(cause).__name__})"
    return f"{type(cause).__name__}: {cause}"


def failed_url(err: BaseException) -> str:
    """The URL of the request that failed ("" when the error names none)."""
    cause = _root(err)
    if isinstance(cause, HfHubHTTPError):
        return str(cause.response.request.url)
    try:
        return str(cause.request.url) if isinstance(cause, httpx2.RequestError) else ""
    except RuntimeError:  # an httpx2 error raised without its request
        return ""


def _root(err: BaseException) -> BaseException:
    seen = err
    while not isinstance(seen, (HfHubHTTPError, httpx2.TransportError)):
        if seen.__cause__ is None:
            return err
        seen = seen.__cause__
    return seen


def _retry_after(err: BaseException) -> float | None:
    cause = _root(err)
    if not isinstance(cause, HfHubHTTPError):
        return None
    try:
        return float(cause.response.headers.get("Retry-After", ""))
    except ValueError:
        return None  # absent, or an HTTP date: the backoff alone decides


_timeout_lock = threading.Lock()
_timeout_s: float | None = None  # what the client's session was last given


def use_timeout(seconds: float) -> None:
    """Make the client's shared session time out (its default waits forever); the session is
    rebuilt only when the setting changes."""
    global _timeout_s
    with _timeout_lock:
        if _timeout_s == seconds:
            return

        def client() -> httpx2.Client:
            session = default_client_factory()
            session.timeout = httpx2.Timeout(seconds)
            return session

        set_client_factory(client)
        _timeout_s = seconds
