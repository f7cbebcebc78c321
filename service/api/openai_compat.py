"""OpenAI-compatible chat completions, so the official SDKs and chat front ends work unchanged.

- `POST /v1/chat/completions` with `model: "vramwise"`, streaming (`chat.completion.chunk` events,
  then `[DONE]`) or not. The last user message is the question.
- Conversations: send `conversation_id` (returned in every response) to continue a stored one,
  or `user` as a stable key (created on first use). Without either, the `messages` array is the
  history: earlier user questions are re-parsed to restore the previous scenario.
- `GET /v1/models` keeps OpenAI's meaning (the models this endpoint serves: `vramwise`); the
  catalog of LLMs the estimator knows is at `GET /v1/catalog/models`.
System messages are accepted and ignored: the agent's own prompts define its behaviour.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import ServerSentEvent

from service.agent.base import Turn
from service.agent.events import DoneEvent, ErrorEvent, Language, TokenEvent
from service.api.deps import ChatContextDep
from service.api.errors import ApiError
from service.api.openai_extension import ExtensionCollector, VramwiseExtension
from service.api.openai_usage import StreamOptions, Usage, usage_of
from service.api.schemas import OPENAI_ERROR_RESPONSES, sse_doc
from service.api.streaming import EventStream, ready_batches
from service.api.turns import PreparedTurn, TurnRunner
from tools.errors import quote

router = APIRouter(tags=["openai-compatible"])

MODEL_ID = "vramwise"
MODEL_CREATED = 1767225600  # 2026-01-01T00:00:00Z: a fixed date for the model object
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
CHUNK_SECONDS = 0.05  # deltas arriving within this of a batch's first one go out with it (one write)


# ---- wire models (OpenAI's chat completion format) --------------------------------------------------
class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(
            str(p.get("text", "")) for p in self.content if p.get("type") in ("text", "input_text")
        )


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "model": "vramwise",
                    "messages": [{"role": "user", "content": "Llama-2-7B inference on a 4090?"}],
                }
            ]
        },
    )

    # the schema names the one model served; any other name is still read, and answered with a 404
    model: str = Field(description="must be `vramwise`", json_schema_extra={"enum": [MODEL_ID]})
    messages: list[ChatMessage] = Field(min_length=1, description="the last user message is the question")
    stream: bool = False
    stream_options: StreamOptions | None = Field(
        default=None, description="`include_usage`: a last chunk with `usage` (characters, see `unit`)"
    )
    user: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        pattern=r"\S",
        description="stable key of a stored conversation (1 to 200 characters, not blank)",
    )
    conversation_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="continue a stored conversation (VRAMwise extension)",
    )
    language: Language | None = Field(default=None, description="answer language (VRAMwise extension)")


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    vramwise: VramwiseExtension | None = None
    conversation_id: str = Field(description="send it back to continue this conversation")


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


VRAMWISE_CARD = ModelCard(id=MODEL_ID, created=MODEL_CREATED, owned_by="vramwise")


# ---- the request -> a prepared turn ---------------------------------------------------------------
def _check_model(model: str) -> None:
    if model != MODEL_ID:
        raise ApiError(
            404,
            f"The model '{quote(model)}' does not exist on this endpoint; use '{MODEL_ID}'",
            field="model",
            accepted=MODEL_ID,
            code="model_not_found",
        )


def user_conversation_id(user: str, owner: str | None) -> str:
    """The stored conversation of an OpenAI `user` key: the key itself when API keys are off; with keys on,
    a digest of (API key owner, user), so two API keys using the same `user` never share a conversation."""
    if owner is None:
        return user
    return "u-" + hashlib.sha256(f"{owner}\n{user}".encode()).hexdigest()[:40]


async def _prepare(req: ChatCompletionRequest, runner: TurnRunner, owner: str | None) -> PreparedTurn:
    _check_model(req.model)
    last = req.messages[-1]
    if last.role != "user":
        raise ApiError(
            422,
            f"the last message must be the user's question (got role '{last.role}')",
            field=f"messages.{len(req.messages) - 1}.role",
            accepted="user",
        )
    field = f"messages.{len(req.messages) - 1}.content"
    if req.conversation_id is not None:
        return await runner.prepare(
            last.text(), conversation_id=req.conversation_id, language=req.language, field=field, owner=owner
        )
    if req.user is not None:
        return await runner.prepare(
            last.text(),
            conversation_id=user_conversation_id(req.user, owner),
            language=req.language,
            create_if_missing=True,
            field=field,
            owner=owner,
        )
    history = [
        Turn(role=m.role, content=m.text())  # type: ignore[arg-type]
        for m in req.messages[:-1]
        if m.role in ("user", "assistant")
    ]
    return await runner.prepare_from_history(
        last.text(), history, language=req.language, field=field, owner=owner
    )


# ---- routes ---------------------------------------------------------------------------------------
_CONVERSATION = "#/paths/~1v1~1conversations~1{conversation_id}"
# OpenAPI links: the conversation a completion answered in can be read, continued and forgotten
CONVERSATION_LINKS = {
    "GetConversation": {
        "operationRef": f"{_CONVERSATION}/get",
        "parameters": {"conversation_id": "$response.body#/conversation_id"},
    },
    "DeleteConversation": {
        "operationRef": f"{_CONVERSATION}/delete",
        "parameters": {"conversation_id": "$response.body#/conversation_id"},
    },
    "ContinueConversation": {
        "operationRef": "#/paths/~1v1~1chat~1completions/post",
        "requestBody": {
            "model": "vramwise",
            "conversation_id": "$response.body#/conversation_id",
            "messages": [{"role": "user", "content": "What about an A100 80GB?"}],
        },
    },
}


@router.post(
    "/v1/chat/completions",
    summary="OpenAI-compatible chat completion (model `vramwise`), streaming or not",
    response_model=ChatCompletion,
    responses={
        200: {
            **sse_doc(
                "With `stream: true`: `chat.completion.chunk` objects as `data:` lines, then `data: [DONE]`. "
                "Otherwise one `chat.completion` object.",
                {},
            )[200],
            "links": CONVERSATION_LINKS,
        },
        **OPENAI_ERROR_RESPONSES,
    },
)
async def chat_completions(
    req: ChatCompletionRequest, context: ChatContextDep
) -> ChatCompletion | EventStream:
    runner = context.runner
    turn = await _prepare(req, runner, context.owner)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    if req.stream:
        usage = req.stream_options is not None and req.stream_options.include_usage
        prompts = [m.text() for m in req.messages] if usage else None
        return EventStream(
            _chunks(runner, turn, completion_id, created, prompts), ping_s=15, headers=SSE_HEADERS
        )
    text = ""
    collector = ExtensionCollector()
    await runner.begin(turn)
    async for ev in runner.run(turn):
        collector.see(ev)
        if isinstance(ev, DoneEvent):
            text = ev.answer.answer
        elif isinstance(ev, ErrorEvent):
            text = ev.message
    return ChatCompletion(
        id=completion_id,
        created=created,
        model=MODEL_ID,
        choices=[Choice(message=AssistantMessage(content=text + collector.notices_text()))],
        usage=usage_of((m.text() for m in req.messages), text + collector.notices_text()),
        conversation_id=turn.conversation_id,
        vramwise=collector.extension,
    )


def _chunk(
    completion_id: str,
    created: int,
    cid: str,
    delta: dict[str, Any],
    finish: str | None,
    extension: VramwiseExtension | None = None,
) -> ServerSentEvent:
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL_ID,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "conversation_id": cid,
    }
    if extension is not None:
        body["vramwise"] = extension.model_dump(mode="json")
    return ServerSentEvent(data=json.dumps(body, ensure_ascii=False))


async def _chunks(
    runner: TurnRunner, turn: PreparedTurn, completion_id: str, created: int, prompts: list[str] | None
) -> AsyncIterator[bytes]:
    """`chat.completion.chunk` events; deltas ready together go out in one write; with `prompts` (the
    request asked `stream_options.include_usage`), a last chunk with `usage` and no choices."""
    cid = turn.conversation_id
    await runner.begin(turn)  # the question is stored before the first chunk
    yield _chunk(completion_id, created, cid, {"role": "assistant", "content": ""}, None).encode()
    streamed = False
    sent: list[str] = []
    collector = ExtensionCollector()
    async for batch in ready_batches(runner.run(turn), window_s=CHUNK_SECONDS):
        out: list[bytes] = []
        for ev in batch:
            collector.see(ev)
            text = None
            if isinstance(ev, TokenEvent) and ev.text:
                streamed = True
                text = ev.text
            elif isinstance(ev, DoneEvent) and not streamed:
                text = ev.answer.answer
            elif isinstance(ev, ErrorEvent):
                text = ev.message
            if text is not None:
                sent.append(text)
                out.append(_chunk(completion_id, created, cid, {"content": text}, None).encode())
        if out:
            yield b"".join(out)
    if notices := collector.notices_text():
        sent.append(notices)
        yield _chunk(completion_id, created, cid, {"content": notices}, None).encode()
    last = _chunk(completion_id, created, cid, {}, "stop", collector.extension).encode()
    if prompts is not None:  # OpenAI's shape: a chunk with empty choices and the usage
        usage = usage_of(prompts, "".join(sent)).model_dump()
        body = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": MODEL_ID,
            "choices": [],
            "usage": usage,
            "conversation_id": cid,
        }
        last += ServerSentEvent(data=json.dumps(body, ensure_ascii=False)).encode()
    yield last + ServerSentEvent(data="[DONE]").encode()


@router.get(
    "/v1/models", summary="OpenAI models list: the model this endpoint serves", response_model=ModelList
)
async def list_models() -> ModelList:
    return ModelList(data=[VRAMWISE_CARD])


@router.get(
    "/v1/models/{model_id}",
    summary="OpenAI model retrieval",
    response_model=ModelCard,
    responses={404: OPENAI_ERROR_RESPONSES[404]},
)
async def get_model(model_id: str) -> ModelCard:
    _check_model(model_id)
    return VRAMWISE_CARD
