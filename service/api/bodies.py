"""Request bodies checked once, before any route parses them: size, media type, and JSON that is valid
text. Each refusal is a 4xx in the route's error shape that says what was wrong and what is accepted:

- not all sent within `VRAMWISE_REQUEST_READ_S` (default 20 s) of the request's start: 408 and a warning
  (a client sending a byte now and then held its connection and buffer for as long as it liked);
- larger than `VRAMWISE_MAX_BODY_BYTES` (default 1 MiB): 413, from the `Content-Length` header when it is
  sent, else as soon as the chunks read pass the limit (nothing larger is ever held);
- a body whose `Content-Type` is not JSON: 415 (`/slack/events` takes Slack's form posts and is exempt);
- malformed JSON, NaN/Infinity (not JSON, and not numbers a job can have), numbers that overflow a float,
  nesting deeper than Python's parser takes, and lone UTF-16 surrogates (`"\\ud800"`: not a character,
  they cannot be stored or sent back): 400, one shape (`code: malformed_json`).

The body is then handed to the route unchanged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.errors import ApiError, error_response, malformed

log = logging.getLogger("vramwise.connections")

DEFAULT_MAX_BODY_BYTES = 1 << 20
DEFAULT_READ_S = 20.0
SHALLOW_BRACKETS = 100  # a body with at most this many `[` and `{` nests far below the recursion limit
RAW_BODY_PATHS = frozenset({"/slack/events"})  # form-encoded Slack posts, verified by their signature


class BodyGuardMiddleware:
    def __init__(
        self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES, read_s: float = DEFAULT_READ_S
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.read_s = read_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send, self._too_large())
            return
        try:
            async with asyncio.timeout(self.read_s):
                body = await self._read(receive)
        except TimeoutError:
            client = scope.get("client") or ("a client", 0)
            log.warning(
                "request body from %s not sent within %.0f s (VRAMWISE_REQUEST_READ_S): 408",
                client[0],
                self.read_s,
            )
            await self._refuse(scope, receive, send, self._too_slow())
            return
        if body is None:  # the client left
            return
        if len(body) > self.max_bytes:
            await self._refuse(scope, receive, send, self._too_large())
            return
        if scope["path"] not in RAW_BODY_PATHS:
            problem = check_json_body(body, headers.get(b"content-type"))
            if problem is not None:
                await self._refuse(scope, receive, send, problem)
                return
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, receive: Receive) -> bytes | None:
        """The whole body, or None when the client disconnected; a body just past the limit is returned
        as soon as it is (nothing larger is ever held)."""
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            chunks.append(chunk)
            if size > self.max_bytes:
                break
            more = message.get("more_body", False)
        return b"".join(chunks)

    def _too_slow(self) -> ApiError:
        return ApiError(
            408,
            f"the request body was not sent within {self.read_s:.0f} seconds",
            field="body",
            accepted=f"a whole body within {self.read_s:.0f} s (VRAMWISE_REQUEST_READ_S)",
            code="request_timeout",
        )

    def _too_large(self) -> ApiError:
        return ApiError(
            413,
            f"the request body is larger than {self.max_bytes:,} bytes",
            field="body",
            accepted=f"at most {self.max_bytes:,} bytes (VRAMWISE_MAX_BODY_BYTES)",
            code="body_too_large",
        )

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, err: ApiError) -> None:
        await error_response(Request(scope), err)(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the client's disconnect, as the route expects

    return replay


def check_json_body(body: bytes, content_type: bytes | None) -> ApiError | None:
    """Why `body` is not an acceptable JSON request body, or None. An empty body is left to the route
    (it says which fields are required)."""
    if not body:
        return None
    media = (content_type or b"").split(b";", 1)[0].strip().lower()
    if media != b"application/json" and not media.endswith(b"+json"):
        shown = media.decode("latin-1")[:60] or "none"
        return ApiError(
            415,
            f"the request body is sent as {shown}; this endpoint reads JSON",
            field="Content-Type",
            accepted="Content-Type: application/json",
            code="unsupported_media_type",
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return malformed(f"the body is not UTF-8 text (byte {exc.start})")
    try:
        value = _parse(text)
    except json.JSONDecodeError as exc:
        return malformed(f"{exc.msg} at line {exc.lineno} column {exc.colno}")
    except RecursionError:
        return malformed("nested too deeply")
    except ValueError as exc:  # NaN/Infinity/overflow (below) or an integer of more than 4300 digits
        return malformed(str(exc))
    if b"\\u" not in body and body.count(b"[") + body.count(b"{") <= SHALLOW_BRACKETS:
        return None  # no \u escape: no lone surrogate (UTF-8 cannot hold one); too shallow to nest too deeply
    try:
        # C-speed walk over every string and key: a lone surrogate cannot be encoded as UTF-8
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        where = repr(exc.object[exc.start : exc.end])[1:-1] if isinstance(exc.object, str) else "?"
        return malformed(
            f"it holds a lone UTF-16 surrogate ({where}), which is not a character; send valid Unicode text"
        )
    except (RecursionError, ValueError):
        return malformed("nested too deeply")
    return None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; send a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large for a float; send a finite number")
    return value


# json.loads with these hooks builds a decoder (and its scanner) on every call: built once
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)


def _parse(text: str) -> Any:
    """`json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)`."""
    try:
        return _DECODER.decode(text)
    except ValueError:  # rare: parse again for json.loads' own error (it checks for a UTF-8 BOM first)
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
