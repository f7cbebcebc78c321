"""What one HTTP request is, as the logs, metrics and spans describe it: a `RequestRecord` made by the
request middleware (service/observability/requests.py) and filled in by whoever learns more (the turn
runner: the conversation; the error handlers: the refusal's reason).

The record travels in a context variable, the way request ids travel in asgi-correlation-id and
structlog's `contextvars`: a request's tasks (its stream's producer task, a Slack answer started while
handling the Slack request) copy the context when they are created, so they all see the same record.
"""

from __future__ import annotations

import os
import re
import time
from contextvars import ContextVar
from dataclasses import dataclass, field

# an incoming X-Request-ID is kept when it is this shape (a proxy's or a client's id), else a new one is made
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")

# the channel of a request, by its path (docs/reference.md, "Operating")
_CHANNEL_PATHS = {"/v1/chat": "web", "/v1/chat/completions": "openai", "/slack/events": "slack"}
_CHANNEL_PREFIXES = (("/v1/coach/", "coach"),)


@dataclass
class RequestRecord:
    request_id: str
    method: str
    path: str
    channel: str | None
    started: float = field(default_factory=time.perf_counter)
    conversation_id: str | None = None
    question: str | None = None  # only when VRAMWISE_LOG_QUESTIONS=1
    agent: str | None = None
    trace_id: str | None = None  # 32 hex digits, when the request is traced


current_request: ContextVar[RequestRecord | None] = ContextVar("vramwise_request", default=None)


def request_id_from(header: bytes | None) -> str:
    """The incoming X-Request-ID when it is a plain token, else a new random one (32 hex digits)."""
    if header:
        value = header.decode("latin-1").strip()
        if _REQUEST_ID.match(value):
            return value
    return os.urandom(16).hex()  # as random as uuid4's 122 bits, without building a UUID


def channel_of(path: str) -> str | None:
    """web (`POST /v1/chat`), openai, slack, coach; None for every other route."""
    channel = _CHANNEL_PATHS.get(path)
    if channel is None:
        for prefix, name in _CHANNEL_PREFIXES:
            if path.startswith(prefix):
                return name
    return channel
