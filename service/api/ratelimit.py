"""Request rate limits (`VRAMWISE_RATE_LIMIT`, e.g. `60/minute`) and a cap on concurrent chat streams
(`VRAMWISE_MAX_STREAMS_PER_CLIENT`), per client: the API key's owner digest when keys are on, else the
client address. Beyond either: 429 with `Retry-After`.

Requests are counted in fixed windows (a window of the stated period starting at a multiple of it). On a
PostgreSQL store the counts live in the database (`rate_limit_windows`, one upsert per request), so every
replica behind a load balancer enforces the same limit; on SQLite (one process) they are kept in memory.
If the database cannot count, the request is let through (the limit protects the service; refusing
everyone while the database is down would be an outage of its own) and the failure is logged.
"""

from __future__ import annotations

import logging
import math
import re
import time
from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.dialects import postgresql
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.errors import ApiError, error_response
from service.db_models import RateLimitRow
from service.store import ConversationStore

log = logging.getLogger(__name__)

UNLIMITED_PATHS = frozenset({"/healthz", "/readyz", "/slack/events"})  # probes; Slack retries on its own
STREAM_PATHS = frozenset({"/v1/chat", "/v1/chat/completions"})
PERIODS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d+\s*)?(second|minute|hour|day)s?\s*$", re.IGNORECASE)
_TABLE = RateLimitRow.__table__


@dataclass(frozen=True)
class Rate:
    requests: int
    period_s: int


def parse_rate(text: str) -> Rate:
    """`60/minute`, `10/second`, `1000/hour`, `5/10 minutes` -> Rate; ValueError says what is accepted."""
    m = _RATE.match(text)
    if not m or int(m.group(1)) < 1:
        raise ValueError(
            f"rate limit {text!r} is not understood; accepted: N/second, N/minute, N/hour or N/day (N >= 1)"
        )
    multiple = int(m.group(2)) if m.group(2) else 1
    return Rate(requests=int(m.group(1)), period_s=max(1, multiple) * PERIODS[m.group(3).lower()])


def client_key(scope: Scope) -> str:
    """Who is asking: the API key's owner digest when keys are on, else the client address."""
    owner = (scope.get("state") or {}).get("owner")
    if owner:
        return f"key:{owner[:32]}"
    client = scope.get("client")
    return f"ip:{client[0] if client else 'unknown'}"


class MemoryCounter:
    """Fixed-window counts of one process."""

    def __init__(self) -> None:
        self._window = -1
        self._hits: dict[str, int] = {}

    async def hit(self, client: str, window: int) -> int:
        if window != self._window:  # a new window: the old counts are no longer needed
            self._window, self._hits = window, {}
        self._hits[client] = self._hits.get(client, 0) + 1
        return self._hits[client]


class DatabaseCounter:
    """Fixed-window counts in the store's PostgreSQL database, shared by every replica."""

    def __init__(self, store: ConversationStore) -> None:
        self._store = store
        self._swept = -1

    async def hit(self, client: str, window: int) -> int:
        engine = self._store.engine
        stmt = postgresql.insert(_TABLE).values(client=client, window_start=window, hits=1)
        stmt = stmt.on_conflict_do_update(
            index_elements=[_TABLE.c.client, _TABLE.c.window_start], set_={"hits": _TABLE.c.hits + 1}
        ).returning(_TABLE.c.hits)
        async with engine.begin() as conn:
            hits = int((await conn.execute(stmt)).scalar_one())
            if window != self._swept:  # once per window per replica: forget the windows before
                self._swept = window
                await conn.execute(delete(_TABLE).where(_TABLE.c.window_start < window))
        return hits


class RateLimitMiddleware:
    def __init__(self, app: ASGIApp, rate: Rate, store: ConversationStore) -> None:
        self.app = app
        self.rate = rate
        self._store = store
        self._counter: MemoryCounter | DatabaseCounter | None = None

    def _counter_for_store(self) -> MemoryCounter | DatabaseCounter:
        if self._counter is None:
            shared = self._store.engine.dialect.name == "postgresql"
            self._counter = DatabaseCounter(self._store) if shared else MemoryCounter()
        return self._counter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNLIMITED_PATHS:
            await self.app(scope, receive, send)
            return
        now = time.time()
        period = self.rate.period_s
        window = int(now // period) * period
        try:
            hits = await self._counter_for_store().hit(client_key(scope), window)
        except Exception as exc:  # the database cannot count right now: let the request through
            log.warning("rate limit not counted (%s); request allowed", exc)
            hits = 0
        if hits > self.rate.requests:
            retry = max(1, math.ceil(window + period - now))
            err = ApiError(
                429,
                f"rate limit exceeded: {self.rate.requests} requests per {_period_text(period)}; "
                f"retry in {retry} s",
                accepted=f"{self.rate.requests} requests per {_period_text(period)}",
                code="rate_limit_exceeded",
            )
            resp = error_response(Request(scope), err)
            resp.headers["Retry-After"] = str(retry)
            await resp(scope, receive, send)
            return
        await self.app(scope, receive, send)


class StreamCapMiddleware:
    """At most `limit` chat requests (streaming or not) in flight per client; the next one gets 429."""

    RETRY_AFTER_S = 1

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit
        self._open: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in STREAM_PATHS:
            await self.app(scope, receive, send)
            return
        key = client_key(scope)
        if self._open.get(key, 0) >= self.limit:
            err = ApiError(
                429,
                f"too many answers in progress for this client ({self.limit} at once); "
                "wait for one to finish",
                accepted=f"at most {self.limit} concurrent chat requests per client",
                code="too_many_streams",
            )
            resp = error_response(Request(scope), err)
            resp.headers["Retry-After"] = str(self.RETRY_AFTER_S)
            await resp(scope, receive, send)
            return
        self._open[key] = self._open.get(key, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self._open[key] - 1
            if left:
                self._open[key] = left
            else:
                del self._open[key]


def _period_text(seconds: int) -> str:
    for name, size in reversed(PERIODS.items()):
        if seconds % size == 0:
            count = seconds // size
            return name if count == 1 else f"{count} {name}s"
    return f"{seconds} s"
