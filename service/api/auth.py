"""Optional API keys (`VRAMWISE_API_KEYS`, comma-separated): `Authorization: Bearer <key>` on every route
but the probes, Slack (which signs its own requests) and the web page with its static files (the page asks
the person for a key and keeps it in the tab's sessionStorage: service/web/auth.js); unset, the service is
open, as before.

The key itself is never stored: a request's `owner` is the SHA-256 digest of its key, kept on the request
(`request.state.owner`) and on every conversation it creates, so another key gets 404 for it
(`service/store.py`, `visible`). An ASGI middleware, so a refused request costs no body parsing.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated

from fastapi import Depends, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.errors import ApiError, error_response

OPEN_PATHS = frozenset({"/healthz", "/readyz", "/slack/events", "/"})  # "/": the page (it asks for a key)
OPEN_PREFIXES = ("/static/",)  # the page's own files: no data in them


def owner_of(key: str) -> str:
    """The stored owner of what `key` creates: its SHA-256 hex digest."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def parse_keys(raw: str | list[str] | None) -> list[str]:
    """`a,b , c` -> ['a', 'b', 'c'] (blank entries dropped)."""
    if raw is None:
        return []
    items = raw.split(",") if isinstance(raw, str) else raw
    return [k.strip() for k in items if k and k.strip()]


class ApiKeyMiddleware:
    """401 with `WWW-Authenticate: Bearer` unless the request carries one of the keys."""

    def __init__(self, app: ASGIApp, keys: list[str]) -> None:
        self.app = app
        self._digests = [owner_of(k).encode() for k in keys]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or scope["path"].startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        owner = self._match(_bearer(scope))
        if owner is None:
            from starlette.requests import Request as StarletteRequest

            has_header = any(name == b"authorization" for name, _ in scope.get("headers", ()))
            err = ApiError(
                401,
                "invalid API key" if has_header else "this service needs an API key",
                field="Authorization",
                accepted="Authorization: Bearer <one of the keys in VRAMWISE_API_KEYS>",
                code="invalid_api_key",
            )
            resp = error_response(StarletteRequest(scope), err)
            resp.headers["WWW-Authenticate"] = "Bearer"
            await resp(scope, receive, send)
            return
        scope.setdefault("state", {})["owner"] = owner
        await self.app(scope, receive, send)

    def _match(self, key: str | None) -> str | None:
        if not key:
            return None
        digest = owner_of(key).encode()
        found = False
        for known in self._digests:  # compare against every key: the time taken does not say which matched
            found |= hmac.compare_digest(digest, known)
        return digest.decode() if found else None


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


async def get_owner(request: Request) -> str | None:
    """The asking key's digest, or None when API keys are off (`async`: FastAPI would run a plain `def`
    dependency in its thread pool, a thread hand-off per request). Read from the scope's state, where
    `ApiKeyMiddleware` puts it (`request.state` wraps it in a new object and raises AttributeError when
    keys are off)."""
    return (request.scope.get("state") or {}).get("owner")


OwnerDep = Annotated[str | None, Depends(get_owner)]
