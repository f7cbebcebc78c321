"""How `vramwise serve` runs uvicorn: who may set the client's address, and bounded connections.

- Client addresses: uvicorn's proxy-headers handling (its `ProxyHeadersMiddleware`) believes
  `X-Forwarded-For` / `X-Forwarded-Proto` only from `VRAMWISE_TRUSTED_PROXIES` (uvicorn's own default
  trusts loopback, so any local client could pick a fresh rate-limit budget per forged address).
- Bounded connections, each a uvicorn setting: the request head's size (`h11_max_incomplete_event_size`;
  h11 is the parser that has this bound, httptools has none: 400 and uvicorn's warning beyond it), idle
  keep-alive (`timeout_keep_alive`), open connections (`limit_concurrency`: 503 and uvicorn's warning
  "Exceeded concurrency limit."), and a deadline for a new connection's request head
  (`RequestHeadDeadline`, below: uvicorn has none, so 800 half-sent heads stayed open for as long as their
  clients liked). The body's deadline is service/api/bodies.py's (408).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from service.settings import Settings

log = logging.getLogger("vramwise.connections")


def trusted_proxies(raw: str | None) -> list[str]:
    """`VRAMWISE_TRUSTED_PROXIES` as uvicorn's `forwarded_allow_ips` list (blank entries dropped)."""
    return [item.strip() for item in (raw or "").split(",") if item.strip()]


class RequestHeadDeadline(H11Protocol):
    """uvicorn's h11 protocol with one addition: a request head must arrive whole within `request_read_s`
    of the connection opening, or of the response before it ending; else the connection is closed, with a
    warning. A client that sends nothing, or a header a byte at a time, held a socket and its buffer for as
    long as it liked: uvicorn's keep-alive timer only runs between requests and stops at the first byte."""

    deadline_s: float = 20.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer = asyncio.get_running_loop().call_later(self.deadline_s, self._head_overdue, None)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._head_timer.cancel()  # the next request's head has its own deadline
        if not self.transport.is_closing():
            self._head_timer = asyncio.get_running_loop().call_later(
                self.deadline_s, self._head_overdue, self.cycle
            )

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_timer.cancel()
        super().connection_lost(exc)

    def _head_overdue(self, cycle_then: object) -> None:
        if self.cycle is cycle_then and not self.transport.is_closing():  # no new request head since
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
            log.warning(
                "closing the connection from %s: no complete request head within %.0f s "
                "(VRAMWISE_REQUEST_READ_S)",
                client,
                self.deadline_s,
            )
            self.transport.close()


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for `uvicorn.run` / `uvicorn.Config` from the settings."""
    proxies = trusted_proxies(settings.trusted_proxies)
    protocol = type("BoundedH11Protocol", (RequestHeadDeadline,), {"deadline_s": settings.request_read_s})
    return {
        "host": settings.host,
        "port": settings.port,
        "http": protocol,
        "proxy_headers": bool(proxies),
        "forwarded_allow_ips": proxies,
        "h11_max_incomplete_event_size": settings.max_header_bytes,
        "timeout_keep_alive": settings.keep_alive_s,
        "limit_concurrency": settings.max_connections,
    }
