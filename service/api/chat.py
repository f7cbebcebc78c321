"""`POST /v1/chat`: a question in, Server-Sent Events out; stored conversations.

Events (each `data` is JSON): `meta` {conversation_id, agent} first, then `scenario` (the
Scenario), `estimate` (the Estimate), `display` (its panel texts in the answer's language),
`token` {text}, `notice` {message, code}, and exactly one terminal event: `done` (the full Answer,
plus `display` when it has an estimate) or `error` {error, message, field, accepted, suggestions}.
`POST /v1/display` gives a stored turn's estimate and panel texts back (the page's restored turns).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from service.agent.events import (
    Display,
    DoneEvent,
    ErrorEvent,
    Language,
)
from service.agent.render import display_panels
from service.api.auth import OwnerDep
from service.api.deps import ChatContextDep, StoreDep
from service.api.errors import ApiError
from service.api.schemas import ERROR_RESPONSES, ChatRequest, json_error_responses, sse_doc
from service.api.sse_wire import event_bytes, turn_frames
from service.api.streaming import EventStream, LastChunk, ready_batches
from service.api.turns import PreparedTurn, TurnRunner
from service.conversation_pages import (
    DEFAULT_PAGE,
    MAX_PAGE,
    ConversationPage,
    conversation_page,
    parse_cursor,
)
from tools.errors import quote
from tools.result import Estimate
from tools.scenario import Scenario

CONVERSATION_ACCEPTED = (
    "a conversation_id from a chat answer of this service (and of this API key when keys are on)"
)

router = APIRouter(tags=["chat"])

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
PING_SECONDS = 15
CHUNK_SECONDS = 0.05  # events arriving within this of a batch's first one go out with it (one write)


async def chat_events(runner: TurnRunner, turn: PreparedTurn, agent_name: str) -> AsyncIterator[bytes]:
    """The question stored, `meta`, then the agent's events; those ready together go out in one write."""
    await runner.begin(turn)  # before `meta`: a conversation id handed out already holds the question
    yield event_bytes("meta", {"conversation_id": turn.conversation_id, "agent": agent_name})
    language = turn.answer_language
    async for batch in ready_batches(runner.run(turn), window_s=CHUNK_SECONDS):
        data = b"".join(turn_frames(ev, language) for ev in batch)
        # the batch with the terminal event (`done` or `error`: the runner ends there) ends the body too
        yield LastChunk(data) if isinstance(batch[-1], DoneEvent | ErrorEvent) else data


@router.post(
    "/v1/chat",
    summary="Ask a question; the answer streams as Server-Sent Events",
    response_class=EventStream,
    responses={
        **sse_doc(
            "An event stream that always ends with `done` or `error`:",
            {
                "meta": "{conversation_id, agent} -- send conversation_id back to ask a follow-up",
                "scenario": "the Scenario the question was parsed into",
                "estimate": "the Estimate (components, verdict, suggestions, assumptions)",
                "display": "the estimate's panel texts in the answer's language: labels of components, "
                "suggestion changes, assumption lines, verdict, notes, serving capacity (optional)",
                "token": "{text}: a piece of the answer text",
                "notice": "{message, code}: out-of-band information (e.g. LLM fallback)",
                "done": "the full Answer {question, language, scenario, estimate, answer, agent, conversation_id}"
                " (+ display when there is an estimate)",
                "error": "{error, field, accepted, suggestions}: what was wrong and what is accepted",
            },
        ),
        **json_error_responses(400, 404, 413, 415, 422),
    },
)
async def chat(body: ChatRequest, context: ChatContextDep) -> EventStream:
    runner = context.runner
    turn = await runner.prepare(
        body.message, conversation_id=body.conversation_id, language=body.language, owner=context.owner
    )
    return EventStream(chat_events(runner, turn, runner.agent.name), ping_s=PING_SECONDS, headers=SSE_HEADERS)


class DisplayRequest(BaseModel):
    scenario: Scenario
    language: Language = "en"


class DisplayResponse(BaseModel):
    estimate: Estimate
    display: Display


@router.post(
    "/v1/display",
    summary="A scenario's estimate with its panel texts in a language (the chat page's restored turns)",
    response_model=DisplayResponse,
    responses={code: ERROR_RESPONSES[code] for code in (400, 413, 415, 422)},
)
async def estimate_display(body: DisplayRequest) -> DisplayResponse:
    from service.agent.assumption_text import with_english_text
    from tools.estimator import estimate

    result = await run_in_threadpool(estimate, body.scenario)  # CPU-bound: keep the loop free
    result = with_english_text(result)  # the JSON keeps each assumption's reason in English
    return DisplayResponse(estimate=result, display=display_panels(result, body.language))


@router.get(
    "/v1/conversations/{conversation_id}",
    summary="A stored conversation: its last scenario and a page of its turns (oldest first)",
    response_model=ConversationPage,
    responses={404: ERROR_RESPONSES[404], 422: ERROR_RESPONSES[422]},
)
async def get_conversation(
    conversation_id: str,
    store: StoreDep,
    owner: OwnerDep,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="turns in this page")] = DEFAULT_PAGE,
    cursor: Annotated[str | None, Query(description="the next_cursor of the page before")] = None,
) -> ConversationPage:
    stored = await conversation_page(store, conversation_id, owner, limit, parse_cursor(cursor))
    if stored is None:
        raise ApiError(
            404,
            f"unknown conversation_id '{quote(conversation_id)}'",
            field="conversation_id",
            accepted=CONVERSATION_ACCEPTED,
        )
    return stored


@router.delete(
    "/v1/conversations/{conversation_id}",
    summary="Forget a stored conversation",
    status_code=204,
    responses={404: ERROR_RESPONSES[404]},
)
async def delete_conversation(conversation_id: str, store: StoreDep, owner: OwnerDep) -> None:
    if not await store.delete(conversation_id, owner):
        raise ApiError(
            404,
            f"unknown conversation_id '{quote(conversation_id)}'",
            field="conversation_id",
            accepted=CONVERSATION_ACCEPTED,
        )
