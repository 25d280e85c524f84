"""Faults the loopback Hub (`tests/hub_server.py`) injects: a plan of failures per route.

    fault = hub.faults.add("commit", "503", times=2)   # the next 2 commits answer HTTP 503
    hub.faults.add("lfs", "drop")                      # every LFS upload PUT: connection closed

Routes: `look-up` (any GET of a repo's API: info, tree, discussions ...), `discussions` (the
PR listing and details), `resolve` (file HEAD/GET, `method` narrows it), `preupload`, `lfs` (the
upload PUT), `commit`. Kinds: an HTTP status (`"500"`, `"503"`, `"429"` with `retry_after`),
`"timeout"` (no answer: the connection stays silent for `hang_s`, then closes), `"drop"` (closed
without an answer) and `"lost-reply"` (the request is served, then the connection closes before
the answer, as when a commit lands but its reply is lost). `times=None` fails every matching
request.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from tests.hub_server import REPO, Response

ROUTES = {
    "look-up": ("GET", rf"/api/models/{REPO}(?:/.*)?"),  # info, tree, refs, commits, discussions
    "discussions": ("GET", rf"/api/models/{REPO}/discussions(?:/\d+)?"),  # PRs: list, details
    "resolve": ("HEAD GET", rf"/{REPO}/resolve/[^/]+/.+"),
    "preupload": ("POST", rf"/api/models/{REPO}/preupload/[^/]+"),
    "lfs": ("PUT", rf"/_lfs/{REPO}/[0-9a-f]{{64}}"),
    "commit": ("POST", rf"/api/models/{REPO}/commit/[^/]+"),
}
SILENT = ("timeout", "drop", "lost-reply")


@dataclass
class Fault:
    route: str
    kind: str
    times: int | None = None  # None: every matching request
    method: str | None = None
    retry_after: int | None = None  # seconds, sent with the status (429)
    hits: int = 0

    def __post_init__(self) -> None:
        if self.route not in ROUTES:
            raise ValueError(f"route must be one of {', '.join(ROUTES)}, not {self.route!r}")
        if self.kind not in SILENT and not re.fullmatch(r"[45]\d\d", self.kind):
            raise ValueError(f"kind must be an HTTP error status or one of {SILENT}")

    def matches(self, method: str, path: str) -> bool:
        methods, pattern = ROUTES[self.route]
        wanted = (self.method,) if self.method else methods.split()
        return method in wanted and re.fullmatch(pattern, path) is not None

    @property
    def spent(self) -> bool:
        return self.times is not None and self.hits >= self.times

    @property
    def silent(self) -> bool:
        return self.kind in SILENT

    def answer(self) -> Response:
        message = "injected fault"
        response = Response.json({"error": message}, int(self.kind))
        response.headers["X-Error-Message"] = message
        if self.retry_after is not None:
            response.headers["Retry-After"] = str(self.retry_after)
        return response


class Faults:
    """The plan; `take` is asked once per request, before it is served."""

    def __init__(self, hang_s: float = 2.0) -> None:
        self.hang_s = hang_s
        self.plan: list[Fault] = []
        self.lock = threading.Lock()
        self.released = threading.Event()

    def add(
        self,
        route: str,
        kind: str,
        *,
        times: int | None = None,
        method: str | None = None,
        retry_after: int | None = None,
    ) -> Fault:
        fault = Fault(route, kind, times, method, retry_after)
        with self.lock:
            self.released.clear()
            self.plan.append(fault)
        return fault

    def take(self, method: str, path: str) -> Fault | None:
        """The first unspent fault for this request, counted as hit."""
        with self.lock:
            for fault in self.plan:
                if not fault.spent and fault.matches(method, path):
                    fault.hits += 1
                    return fault
        return None

    def hang(self) -> None:
        """Stay silent (a "timeout"), ended early by `clear`."""
        self.released.wait(self.hang_s)

    def clear(self) -> None:
        with self.lock:
            self.plan.clear()
            self.released.set()
