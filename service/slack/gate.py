"""What `POST /slack/events` checks before Slack's bolt app sees a request, so that an outsider's request is
a clear 4xx (never a 500 and a traceback in the log) and a signed request is answered once:

1. the signature headers are there and well formed (`X-Slack-Request-Timestamp: abc` made bolt's
   verifier raise: a 500), and the signature is Slack's, within its 5-minute window (slack_sdk's
   `SignatureVerifier`, the check bolt itself makes): else 401;
2. the body is a shape bolt can read: UTF-8; JSON that is an object with a `type` (an `event_callback`'s
   `event` an object); a form whose `payload` is such an object with `actions` a list of objects: else 400;
3. a request already answered (the same signature and timestamp; the signature covers the body, so a
   slash command's `trigger_id` too) is refused with 409 (with `X-Slack-Retry-Num`, Slack's own retry:
   200 and nothing runs again, as for a retried event_id): it is recorded in the Slack tables of the
   database before bolt runs, so every replica agrees (a replay within the 5 minutes was answered each time).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any
from urllib.parse import parse_qs

from slack_sdk.signature import SignatureVerifier
from starlette.requests import Request
from starlette.responses import Response

from service.api.errors import ApiError, error_response
from service.slack.store import SlackStore

log = logging.getLogger(__name__)

COMMAND_FIELDS = ("user_id", "channel_id", "response_url")
_TIMESTAMP = re.compile(r"\d{1,12}")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")
SIGNED = "a request signed by Slack: X-Slack-Request-Timestamp (Unix seconds, within 5 minutes) and X-Slack-Signature (v0=<hex HMAC-SHA256>)"
SHAPES = (
    "an Events API JSON object with a type (event_callback: an event object), or a form with command=... "
    "(a slash command) or payload=<a JSON object with a type; actions a list of objects>"
)


def _unsigned(message: str) -> ApiError:
    return ApiError(401, message, field="X-Slack-Signature", accepted=SIGNED, code="invalid_signature")


def _malformed(message: str) -> ApiError:
    return ApiError(
        400,
        f"this Slack request cannot be read: {message}",
        field="body",
        accepted=SHAPES,
        code="malformed_slack_request",
    )


async def refusal(request: Request, verifier: SignatureVerifier, store: SlackStore) -> Response | None:
    """The answer to a request that must not reach bolt, or None when it may."""
    problem = await _problem(request, verifier, store)
    return error_response(request, problem) if isinstance(problem, ApiError) else problem


async def _problem(
    request: Request, verifier: SignatureVerifier, store: SlackStore
) -> ApiError | Response | None:
    timestamp = request.headers.get("x-slack-request-timestamp", "")
    signature = request.headers.get("x-slack-signature", "")
    if not _TIMESTAMP.fullmatch(timestamp) or not _SIGNATURE.fullmatch(signature):
        return _unsigned("missing or malformed Slack signature headers")
    body = await request.body()  # cached on the request: bolt reads the same bytes
    try:
        body.decode("utf-8")  # Slack signs UTF-8 text; the verifier decodes it (a UnicodeDecodeError)
    except UnicodeDecodeError:
        return _unsigned("the body is not UTF-8 text, so it is not signed by Slack")
    if not verifier.is_valid(body=body, timestamp=timestamp, signature=signature):
        return _unsigned("the Slack signature does not match, or its timestamp is over 5 minutes old")
    shape = _shape_problem(body, request.headers.get("content-type", ""))
    if shape is not None:
        return _malformed(shape)
    try:
        first = await store.claim_event(f"request:{timestamp}:{signature}", "")
    except Exception:  # the database is down: answer (the event and thread checks log it too)
        log.exception("could not record a Slack request for the replay check; answering it")
        return None
    if not first:
        if request.headers.get("x-slack-retry-num"):  # Slack's own retry: acknowledged, nothing runs again
            log.info("a Slack retry of a request already answered (timestamp %s): acknowledged", timestamp)
            return Response(status_code=200)
        log.warning("a replayed Slack request (timestamp %s, the same signature) was refused", timestamp)
        return ApiError(
            409,
            "this Slack request was already answered",
            field="X-Slack-Signature",
            accepted="each signed request once",
            code="replayed_request",
        )
    return None


def _shape_problem(body: bytes, content_type: str) -> str | None:
    text = body.decode("utf-8")
    if content_type.split(";", 1)[0].strip().lower() == "application/json":
        return _json_problem(text, "the body")
    form = parse_qs(text, keep_blank_values=True)
    if "payload" in form:
        return _json_problem(form["payload"][0], "payload")
    if "command" in form:
        missing = [name for name in COMMAND_FIELDS if not form.get(name, [""])[0].strip()]
        if missing:
            return f"the slash command has no {', '.join(missing)}"
        if not form["response_url"][0].startswith(("https://", "http://")):
            return "the slash command's response_url is not an http(s) URL"
    return None


def _json_problem(text: str, where: str) -> str | None:
    try:
        value: Any = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return f"{where} is not JSON"
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return f"{where} is not a JSON object with a type"
    if value["type"] == "event_callback":
        event = value.get("event")
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            return f"{where}: the event is not an object with a type"
        if event["type"] in ("app_mention", "message") and not isinstance(event.get("channel"), str):
            return f"{where}: the {event['type']} event has no channel"
        if not isinstance(event.get("text", ""), str | None):
            return f"{where}: the event's text is not a string"
    for name in ("user", "channel", "team", "container", "message", "view"):
        if name in value and value[name] is not None and not isinstance(value[name], dict):
            return f"{where}: {name} is not an object"
    actions = value.get("actions")
    if actions is not None and not (isinstance(actions, list) and all(isinstance(a, dict) for a in actions)):
        return f"{where}: actions is not a list of objects"
    return None


def understood(request: Request, response: Response) -> Response:
    """Bolt's own 404 for a signed request no listener takes (`{"error": "unhandled request"}`), in the
    route's error shape, saying what is accepted."""
    if response.status_code != 404:
        return response
    err = ApiError(
        404,
        "no handler for this Slack request",
        field="body",
        accepted=SHAPES,
        code="unhandled_slack_request",
    )
    return error_response(request, err)
