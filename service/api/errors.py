"""Error responses: bad input gets a 4xx JSON body that says what was wrong and what is accepted.

Shape everywhere: `{"error": message, "field", "accepted", "suggestions"}`; the OpenAI-compatible
routes use OpenAI's `{"error": {"message", "type", "param", "code"}}` so SDKs surface the message.
Unexpected exceptions are logged with their traceback and answered with a plain 500 message.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from tools.errors import ScenarioError

log = logging.getLogger(__name__)

OPENAI_PATHS = ("/v1/chat/completions", "/v1/models")
STORE_RETRY_AFTER_S = 5
STATUS_CODES = {404: "not_found", 405: "method_not_allowed", 500: "internal_error"}  # errors without a code


class ApiError(Exception):
    """A request the service refuses, with the status and the fields of the error body."""

    def __init__(
        self,
        status_code: int,
        message: str,
        *,
        field: str | None = None,
        accepted: str | None = None,
        suggestions: list[str] | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.field = field
        self.accepted = accepted
        self.suggestions = list(suggestions or [])
        self.code = code


_OPENAI_TYPES = {400: "invalid_request_error", 404: "invalid_request_error", 422: "invalid_request_error"}


def error_response(request: Request, err: ApiError) -> JSONResponse:
    # the refusal's reason, for the operator's metrics and access line (service/observability/requests.py)
    request.scope.setdefault("state", {})["refusal_reason"] = err.code or STATUS_CODES.get(err.status_code)
    if request.url.path.startswith(OPENAI_PATHS):
        body: dict[str, Any] = {
            "error": {
                "message": err.message,
                "type": _OPENAI_TYPES.get(
                    err.status_code, "server_error" if err.status_code >= 500 else "invalid_request_error"
                ),
                "param": err.field,
                "code": err.code,
            }
        }
    else:
        accepted = err.accepted
        if accepted is None and 400 <= err.status_code < 500:  # every 4xx says what is accepted
            accepted = DEFAULT_ACCEPTED.get(err.status_code, DEFAULT_ACCEPTED[400])
        body = {
            "error": err.message,
            "field": err.field,
            "accepted": accepted,
            "suggestions": err.suggestions,
        }
    return JSONResponse(body, status_code=err.status_code)


def _loc_to_field(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    return ".".join(parts) or "body"


JSON_ACCEPTED = 'a JSON object (Content-Type: application/json), e.g. {"message": "..."}'


def malformed(reason: str) -> ApiError:
    """The one shape of every body that cannot be read as JSON (service/api/bodies.py, FastAPI's own)."""
    return ApiError(
        400,
        f"malformed JSON in the request body: {reason}",
        field="body",
        accepted=JSON_ACCEPTED,
        code="malformed_json",
    )


def validation_error(exc: RequestValidationError) -> ApiError:
    errors = exc.errors()
    for e in errors:
        if e.get("type") == "json_invalid":
            ctx = e.get("ctx") or {}
            return malformed(str(ctx.get("error", "invalid JSON")))
    if not errors:
        return ApiError(422, "invalid request", field="body", code="invalid_request")
    if (
        len(errors) == 1
        and errors[0].get("type") == "missing"
        and tuple(errors[0].get("loc", ())) == ("body",)
    ):
        return ApiError(
            422, "the request body is empty", field="body", accepted=JSON_ACCEPTED, code="invalid_request"
        )
    problems = [f"{_loc_to_field(e.get('loc', ()))}: {e.get('msg', 'invalid value')}" for e in errors[:5]]
    if len(errors) > 5:
        problems.append(f"and {len(errors) - 5} more")
    first = errors[0]
    accepted = accepted_by(first)
    return ApiError(
        422,
        "; ".join(problems),
        field=_loc_to_field(first.get("loc", ())),
        accepted=accepted,
        code="invalid_request",
    )


_BOUNDS = {"ge": "at least {}", "gt": "more than {}", "le": "at most {}", "lt": "less than {}"}
_TYPES = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "dict": "a JSON object",
    "list": "a JSON array",
    "missing": "this field (it is required)",
    "extra_forbidden": "only the fields documented at /docs (this one is not one of them)",
    "enum": "one of the documented values (see /docs)",
    "literal_error": "one of the documented values (see /docs)",
}


def accepted_by(error: Any) -> str:
    """What a field accepts, from one of pydantic's validation errors: its bounds, its expected values or
    its type; at worst the schema at /docs (every 4xx says what is accepted)."""
    ctx = error.get("ctx") or {}
    if "expected" in ctx:
        return str(ctx["expected"])
    bounds = [text.format(ctx[key]) for key, text in _BOUNDS.items() if key in ctx]
    if "max_length" in ctx or "min_length" in ctx:
        lengths = (ctx.get("min_length"), ctx.get("max_length"))
        bounds.append(f"a length of {lengths[0] or 0} to {lengths[1] if lengths[1] is not None else 'any'}")
    if "pattern" in ctx:
        bounds.append(f"text matching {ctx['pattern']}")
    if bounds:
        return " and ".join(bounds)
    kind = str(error.get("type", ""))
    for prefix, text in _TYPES.items():
        if kind == prefix or kind.startswith(prefix + "_"):
            return text
    return f"{_loc_to_field(error.get('loc', ()))} as documented at /docs"


DEFAULT_ACCEPTED = {
    400: "a request as documented at /docs",
    401: "Authorization: Bearer <an API key of this service>",
    404: "an endpoint listed at /docs, and ids this service handed out",
    405: "the methods listed at /docs for this path",
    409: "a request that does not repeat one already done",
    413: "a smaller request body",
    415: "Content-Type: application/json",
    422: "a request as documented at /docs",
    429: "fewer requests: wait for Retry-After",
}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(request, validation_error(exc))

    @app.exception_handler(ScenarioError)
    async def _scenario(request: Request, exc: ScenarioError) -> JSONResponse:
        err = ApiError(
            422,
            exc.render(),
            field=exc.field,
            accepted=exc.accepted,
            suggestions=exc.suggestions,
            code="invalid_scenario",
        )
        response = error_response(request, err)
        observability = getattr(request.app.state, "observability", None)
        if exc.code and exc.code.startswith("hub_"):  # a Hub look-up failed: its own reason in the metrics
            request.scope["state"]["refusal_reason"] = exc.code
            if observability is not None:
                observability.count_hub_error(exc.code)
        return response

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no such endpoint: {request.method} {request.url.path} (see /docs)"
        elif exc.status_code == 405:
            detail = f"method {request.method} is not allowed on {request.url.path} (see /docs)"
        resp = error_response(request, ApiError(exc.status_code, detail))
        if exc.headers:
            resp.headers.update(exc.headers)
        return resp

    async def _store_unavailable(request: Request, exc: Exception) -> JSONResponse:
        # the database (or another backing service) is unreachable: retryable, so 503 + Retry-After,
        # which load balancers and clients treat as "try again / another replica", not a bug (500)
        log.warning("backing store unavailable on %s %s: %s", request.method, request.url.path, exc)
        resp = error_response(
            request,
            ApiError(
                503,
                "the conversation store is unreachable right now; retry in a few seconds",
                code="store_unavailable",
            ),
        )
        resp.headers["Retry-After"] = str(STORE_RETRY_AFTER_S)
        return resp

    app.add_exception_handler(DBAPIError, _store_unavailable)
    app.add_exception_handler(ConnectionError, _store_unavailable)
    app.add_exception_handler(TimeoutError, _store_unavailable)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(
            request,
            ApiError(500, "internal error while handling the request; the details are in the service log"),
        )
