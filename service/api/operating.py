"""What an operator switches on to open the service to a team, hooked into the app in one call:
request-body checks (always), API keys, rate limits and a per-client cap on concurrent chat streams
(each only when configured). Outermost first: keys (a request without one costs nothing more), rate
limit, stream cap, body checks, then the routes."""

from __future__ import annotations

from fastapi import FastAPI

from service.api.auth import ApiKeyMiddleware, parse_keys
from service.api.bodies import BodyGuardMiddleware
from service.api.ratelimit import RateLimitMiddleware, StreamCapMiddleware, parse_rate
from service.api.schemas import declare_message_bounds
from service.settings import Settings
from service.store import ConversationStore


def install_operating_guards(app: FastAPI, settings: Settings, store: ConversationStore) -> None:
    """Add the middlewares (Starlette: the last added runs first); the OpenAPI document states the
    question's configured bounds."""
    build_openapi = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            app.openapi_schema = declare_message_bounds(build_openapi(), settings.max_message_chars)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(BodyGuardMiddleware, max_bytes=settings.max_body_bytes, read_s=settings.request_read_s)
    if settings.max_streams_per_client:
        app.add_middleware(StreamCapMiddleware, limit=settings.max_streams_per_client)
    if settings.rate_limit:
        app.add_middleware(RateLimitMiddleware, rate=parse_rate(settings.rate_limit), store=store)
    keys = parse_keys(settings.api_keys)
    if keys:
        app.add_middleware(ApiKeyMiddleware, keys=keys)
