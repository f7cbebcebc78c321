"""Request and response models of the HTTP API (declared so /docs is exact)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.agent.events import Language


class ErrorBody(BaseModel):
    """Every 4xx/5xx body outside the OpenAI-compatible routes."""

    error: str = Field(description="what was wrong, in one sentence")
    field: str | None = Field(default=None, description="the request field at fault")
    accepted: str | None = Field(default=None, description="what is accepted there")
    suggestions: list[str] = Field(default_factory=list, description="near names for unknown ids")


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIErrorBody(BaseModel):
    error: OpenAIErrorDetail


class ChatRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"message": "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?", "language": "en"}
            ]
        },
    )

    message: str = Field(description="the question, in English or Chinese")
    conversation_id: str | None = Field(
        default=None, max_length=200, description="continue a stored conversation (from the `meta` event)"
    )
    language: Language | None = Field(default=None, description="answer language; detected when omitted")


class MetaEvent(BaseModel):
    conversation_id: str
    agent: str


class TokenPayload(BaseModel):
    text: str


class NoticePayload(BaseModel):
    message: str
    code: str | None = None


class ErrorPayload(ErrorBody):
    message: str


class Health(BaseModel):
    status: Literal["ok"]
    agent: str
    version: str


class Readiness(BaseModel):
    status: Literal["ready", "unavailable"]
    store: Literal["ok", "unreachable"]
    reason: str | None = None  # why the store is unavailable (a deleted or read-only file, no answer)


def sse_doc(description: str, events: dict[str, str]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entry for a Server-Sent-Events route: `text/event-stream`, its event names
    (OpenAPI 3.2's `itemSchema` for one event: `event` is one of the names, `data` a JSON text)."""
    lines = "\n".join(f"- `{name}`: {what}" for name, what in events.items())
    item: dict[str, Any] = {
        "type": "object",
        "properties": {
            "data": {"type": "string", "contentMediaType": "application/json"},
            "id": {"type": "string"},
            "retry": {"type": "integer", "minimum": 0},
        },
        "required": ["data"],
    }
    if events:
        item["properties"]["event"] = {"type": "string", "enum": list(events)}
        item["required"] = ["event", "data"]
    return {
        200: {
            "description": f"{description}\n\n{lines}",
            "content": {
                "text/event-stream": {
                    # OpenAPI 3.2: `schema` covers the whole stream read as a list of events,
                    # `itemSchema` one event
                    "schema": {
                        "type": "array",
                        "description": "a stream of Server-Sent Events"
                        + (f": {', '.join(events)}" if events else ""),
                        "items": item,
                    },
                    "itemSchema": item,
                }
            },
        }
    }


def declare_message_bounds(openapi: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """The question's bounds in the OpenAPI document: 1 to `max_chars` characters, not blank (the limit
    is a setting, so it is written when the document is built)."""
    props = openapi.get("components", {}).get("schemas", {}).get("ChatRequest", {}).get("properties", {})
    if "message" in props:
        props["message"].update({"minLength": 1, "maxLength": max_chars, "pattern": r"\S"})
    return openapi


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "malformed JSON (also NaN/Infinity, lone surrogates)"},
    404: {"model": ErrorBody, "description": "unknown conversation id"},
    413: {"model": ErrorBody, "description": "request body over the limit (VRAMWISE_MAX_BODY_BYTES)"},
    415: {"model": ErrorBody, "description": "request body that is not application/json"},
    422: {"model": ErrorBody, "description": "invalid field, empty or oversized message, bad scenario"},
}
OPENAI_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": OpenAIErrorBody, "description": "malformed JSON (also NaN/Infinity, lone surrogates)"},
    404: {"model": OpenAIErrorBody, "description": "unknown model or conversation id"},
    413: {"model": OpenAIErrorBody, "description": "request body over the limit (VRAMWISE_MAX_BODY_BYTES)"},
    415: {"model": OpenAIErrorBody, "description": "request body that is not application/json"},
    422: {"model": OpenAIErrorBody, "description": "invalid request"},
}


def json_error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """ERROR_RESPONSES entries with their media type stated: on a route whose response class is an event
    stream, FastAPI would otherwise document its JSON error bodies as `text/event-stream`."""
    return {
        code: {
            "description": ERROR_RESPONSES[code]["description"],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        }
        for code in codes
    }
