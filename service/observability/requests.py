"""The outermost middleware: every HTTP request gets a request id (an incoming `X-Request-ID` is kept, and
the response carries it), a `RequestRecord` the rest of the request fills in, the HTTP metrics, the
refusal counted by its reason, and one access log line. `GET /metrics` is answered here, before the API-key
middleware (service/observability/endpoint.py says who may read it).

A refusal's reason is the error code the error handlers put on the request's state (`refusal_reason`,
service/api/errors.py: invalid_api_key, rate_limit_exceeded, body_too_large, invalid_scenario, ...).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.errors import STATUS_CODES
from service.observability.context import RequestRecord, channel_of, current_request, request_id_from
from service.observability.metrics import ServiceMetrics
from service.observability.tracing import tag_current_span

access_log = logging.getLogger("vramwise.access")

REQUEST_ID_HEADER = b"x-request-id"
# label values stay a bounded set whatever a client sends: any other method is `other`
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_of(scope: Scope, routes: Sequence[BaseRoute] = ()) -> str:
    """The route's template (`/v1/conversations/{conversation_id}`: bounded label values): the one the router
    matched, else (a request refused before routing: no key, too large) the first of `routes` that matches
    its path; `unmatched` for a path no route serves."""
    path = getattr(scope.get("route"), "path", None)
    if isinstance(path, str):
        return path
    if scope["path"].startswith("/static/"):
        return "/static"
    for route in routes:
        if route.matches(scope)[0] != Match.NONE:
            template = getattr(route, "path", None)
            if isinstance(template, str):
                return template
    return "unmatched"


class ObservabilityMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: ServiceMetrics | None,
        metrics_endpoint: ASGIApp | None,
        access_level: int,
        routes: Sequence[BaseRoute] = (),
        tracing: bool = False,
    ) -> None:
        self.app = app
        self.routes = routes
        self.tracing = tracing
        self.metrics = metrics
        self.metrics_endpoint = metrics_endpoint
        self.access_level = access_level

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = next((v for k, v in scope.get("headers", ()) if k == REQUEST_ID_HEADER), None)
        record = RequestRecord(
            request_id=request_id_from(incoming),
            method=scope["method"] if scope["method"] in METHODS else "other",
            path=scope["path"],
            channel=channel_of(scope["path"]),
        )
        header = (REQUEST_ID_HEADER, record.request_id.encode("latin-1"))
        status = 500  # an exception that escapes: the server's error middleware answers 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        app = self.app
        if scope["path"] == "/metrics" and self.metrics_endpoint is not None:
            app = self.metrics_endpoint
        token = current_request.set(record)
        if self.tracing:  # FastAPI's request span is current here: the id joins the trace to the log line
            record.trace_id = tag_current_span(record.request_id)
        try:
            await app(scope, receive, send_with_id)
        finally:
            current_request.reset(token)
            self._finished(scope, record, status)

    def _finished(self, scope: Scope, record: RequestRecord, status: int) -> None:
        seconds = time.perf_counter() - record.started
        state: dict[str, Any] = scope.get("state") or {}
        route = route_of(scope, self.routes if status != 404 else ())
        reason = state.get("refusal_reason")
        if reason is None and status >= 400:
            reason = STATUS_CODES.get(status, "internal_error" if status >= 500 else f"http_{status}")
        metrics = self.metrics
        if metrics is not None:
            metrics.child(metrics.http_requests, record.method, route, str(status)).inc()
            metrics.child(metrics.http_seconds, record.method, route).observe(seconds)
            if reason is not None and status >= 400:
                metrics.errors.labels(reason).inc()
        if access_log.isEnabledFor(self.access_level):
            fields = {
                "request_id": record.request_id,
                "method": record.method,
                "route": route,
                "path": record.path,
                "status": status,
                "duration_ms": round(seconds * 1000, 2),
                "channel": record.channel,
                "conversation_id": record.conversation_id,
                "owner": state.get("owner"),
                "agent": record.agent,
            }
            if reason is not None and status >= 400:
                fields["reason"] = reason
            if record.trace_id is not None:
                fields["trace_id"] = record.trace_id
            if record.question is not None:
                fields["question"] = record.question
            access_log.log(
                self.access_level,
                "%s %s %d %.1f ms",
                record.method,
                record.path,
                status,
                seconds * 1000,
                extra=fields,
            )
