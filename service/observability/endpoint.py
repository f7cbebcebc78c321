"""`GET /metrics`: the Prometheus text exposition of the app's `ServiceMetrics`.

Who may read it: anyone while neither API keys (`VRAMWISE_API_KEYS`) nor `VRAMWISE_METRICS_TOKEN` are
set; otherwise `Authorization: Bearer <one of the API keys, or the metrics token>` (a Prometheus scrape
job's `authorization: {credentials: ...}`), 401 without. `VRAMWISE_METRICS=false` removes the route.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from service.api.auth import owner_of, parse_keys
from service.api.errors import ApiError, error_response
from service.observability.metrics import EXPOSITION_CONTENT_TYPE, ServiceMetrics


class MetricsEndpoint:
    """An ASGI app answering `GET /metrics` (and HEAD)."""

    def __init__(self, metrics: ServiceMetrics, *, api_keys: str | None, token: str | None) -> None:
        self.metrics = metrics
        secrets = [*parse_keys(api_keys), *([token.strip()] if token and token.strip() else [])]
        self._digests = [owner_of(s).encode() for s in secrets]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        if scope["method"] not in ("GET", "HEAD"):
            err = ApiError(405, f"method {scope['method']} is not allowed on /metrics", accepted="GET")
            await error_response(request, err)(scope, receive, send)
            return
        if self._digests and not self._allowed(_bearer(request)):
            has_header = "authorization" in request.headers
            err = ApiError(
                401,
                "invalid metrics token" if has_header else "/metrics needs a token",
                field="Authorization",
                accepted="Authorization: Bearer <VRAMWISE_METRICS_TOKEN or one of VRAMWISE_API_KEYS>",
                code="invalid_api_key",
            )
            response = error_response(request, err)
            response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        body = b"" if scope["method"] == "HEAD" else self.metrics.exposition()
        await Response(body, media_type=EXPOSITION_CONTENT_TYPE)(scope, receive, send)

    def _allowed(self, secret: str | None) -> bool:
        if not secret:
            return False
        digest = owner_of(secret).encode()
        found = False
        for known in self._digests:  # every one compared: the time taken does not say which matched
            found |= hmac.compare_digest(digest, known)
        return found


def _bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None
