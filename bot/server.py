"""How `mobius bot` serves its app: uvicorn with limits on what one client can hold.

- at most `LIMIT_CONCURRENCY` connections (or requests in flight) at once; past it uvicorn
  answers 503 at once;
- request line and headers at most `MAX_HEADER_BYTES`, and complete within the read deadline of
  the connection opening or of its previous answer, else the connection is closed (uvicorn
  itself only times out connections that send nothing: one that trickles header bytes would be
  held for as long as it liked);
- the body within the read deadline too (the app answers 408: `bot.app`), idle keep-alive
  connections closed after `KEEP_ALIVE_S`.
"""

from __future__ import annotations

import asyncio

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

LIMIT_CONCURRENCY = 100
KEEP_ALIVE_S = 5
MAX_HEADER_BYTES = 16 * 1024
GRACEFUL_SHUTDOWN_S = 10


class _HeaderDeadline(H11Protocol):
    """h11, closing a connection that has not sent a whole request (line and headers) within
    `deadline_s` of opening or of its previous answer."""

    deadline_s = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def _arm(self) -> None:
        self.loop.call_later(self.deadline_s, self._expire, self.cycle)

    def _expire(self, waiting: object) -> None:
        if self.cycle is waiting and not self.transport.is_closing():  # no new request came
            self.transport.close()


def config(
    app: object,
    host: str,
    port: int,
    *,
    read_timeout_s: float,
    log_level: str = "warning",
    access_log: bool = False,
) -> uvicorn.Config:
    """The uvicorn configuration `mobius bot` runs (and the tests and bench/webhooks.py)."""
    protocol = type("BotHTTP", (_HeaderDeadline,), {"deadline_s": read_timeout_s})
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        host=host,
        port=port,
        http=protocol,
        ws="none",
        lifespan="on",
        limit_concurrency=LIMIT_CONCURRENCY,
        timeout_keep_alive=KEEP_ALIVE_S,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        log_level=log_level,
        access_log=access_log,
    )
