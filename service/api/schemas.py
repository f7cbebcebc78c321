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


def sse_doc(description: str, events: dict[str, str]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entry for a Server-Sent-Events route."""
    lines = "\n".join(f"- `{name}`: {what}" for name, what in events.items())
    return {
        200: {
            "description": f"{description}\n\n{lines}",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    }


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "malformed JSON"},
    404: {"model": ErrorBody, "description": "unknown conversation id"},
    422: {"model": ErrorBody, "description": "invalid field, empty or oversized message, bad scenario"},
}
OPENAI_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": OpenAIErrorBody, "description": "malformed JSON"},
    404: {"model": OpenAIErrorBody, "description": "unknown model or conversation id"},
    422: {"model": OpenAIErrorBody, "description": "invalid request"},
}
