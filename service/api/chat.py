"""`POST /v1/chat`: a question in, Server-Sent Events out; stored conversations.

Events (each `data` is JSON): `meta` {conversation_id, agent} first, then `scenario` (the
Scenario), `estimate` (the Estimate), `display` (its panel texts in the answer's language),
`token` {text}, `notice` {message, code}, and exactly one terminal event: `done` (the full Answer,
plus `display` when it has an estimate) or `error` {error, message, field, accepted, suggestions}.
`POST /v1/display` gives a stored turn's estimate and panel texts back (the page's restored turns).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel
from sse_starlette import EventSourceResponse, ServerSentEvent

from service.agent.events import (
    AgentEvent,
    Display,
    DoneEvent,
    ErrorEvent,
    EstimateEvent,
    Language,
    NoticeEvent,
    ScenarioEvent,
    TokenEvent,
)
from service.agent.offline.language import detect_language
from service.agent.render import display_panels
from service.api.auth import OwnerDep
from service.api.deps import AgentDep, RunnerDep, StoreDep
from service.api.errors import ApiError
from service.api.schemas import ERROR_RESPONSES, ChatRequest, sse_doc
from service.api.streaming import ready_batches
from service.api.turns import PreparedTurn, TurnRunner
from service.store import StoredConversation
from tools.errors import quote
from tools.result import Estimate
from tools.scenario import Scenario

router = APIRouter(tags=["chat"])

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
PING_SECONDS = 15


def event_payload(ev: AgentEvent) -> tuple[str, dict[str, Any]]:
    """The SSE event name and its JSON payload for one agent event."""
    if isinstance(ev, ScenarioEvent):
        return "scenario", ev.scenario.model_dump(mode="json", exclude_none=True)
    if isinstance(ev, EstimateEvent):
        return "estimate", ev.estimate.model_dump(mode="json")
    if isinstance(ev, TokenEvent):
        return "token", {"text": ev.text}
    if isinstance(ev, NoticeEvent):
        return "notice", {"message": ev.message, "code": ev.code}
    if isinstance(ev, DoneEvent):
        return "done", ev.answer.model_dump(mode="json")
    if isinstance(ev, ErrorEvent):
        return "error", {
            "error": ev.message,
            "message": ev.message,
            "field": ev.field,
            "accepted": ev.accepted,
            "suggestions": ev.suggestions,
        }
    raise TypeError(f"unknown agent event {type(ev).__name__}")


def _sse(name: str, payload: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(event=name, data=json.dumps(payload, ensure_ascii=False))


def display_payload(estimate: Estimate, language: str) -> dict[str, Any]:
    """The `display` event: the estimate's panel texts in the answer's language (render.display_panels)."""
    return display_panels(estimate, language).model_dump(mode="json")


def turn_events(ev: AgentEvent, display_language: str) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events for one agent event: `estimate` is followed by `display` (its panel texts in
    the language the answer is expected in); `done` carries `display` in the answer's own language."""
    name, payload = event_payload(ev)
    if isinstance(ev, EstimateEvent):
        return [(name, payload), ("display", display_payload(ev.estimate, display_language))]
    if isinstance(ev, DoneEvent) and ev.answer.estimate is not None:
        payload["display"] = display_payload(ev.answer.estimate, ev.answer.language)
    return [(name, payload)]


async def chat_events(runner: TurnRunner, turn: PreparedTurn, agent_name: str) -> AsyncIterator[bytes]:
    """The question stored, `meta`, then the agent's events; those ready together go out in one write."""
    await runner.begin(turn)  # before `meta`: a conversation id handed out already holds the question
    yield _sse("meta", {"conversation_id": turn.conversation_id, "agent": agent_name}).encode()
    # the agents' own rule (offline agent): the stated language, else the question's, else the conversation's
    language = turn.language or detect_language(turn.question, default=turn.state.language or "en")
    async for batch in ready_batches(runner.run(turn)):
        yield b"".join(_sse(*out).encode() for ev in batch for out in turn_events(ev, language))


@router.post(
    "/v1/chat",
    summary="Ask a question; the answer streams as Server-Sent Events",
    response_class=EventSourceResponse,
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
        **ERROR_RESPONSES,
    },
)
async def chat(
    body: ChatRequest,
    runner: RunnerDep,
    agent: AgentDep,
    owner: OwnerDep,
) -> EventSourceResponse:
    turn = await runner.prepare(
        body.message, conversation_id=body.conversation_id, language=body.language, owner=owner
    )
    return EventSourceResponse(chat_events(runner, turn, agent.name), ping=PING_SECONDS, headers=SSE_HEADERS)


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
    from tools.estimator import estimate

    result = await run_in_threadpool(estimate, body.scenario)  # CPU-bound: keep the loop free
    return DisplayResponse(estimate=result, display=display_panels(result, body.language))


@router.get(
    "/v1/conversations/{conversation_id}",
    summary="A stored conversation: its turns and last scenario",
    response_model=StoredConversation,
    responses={404: ERROR_RESPONSES[404]},
)
async def get_conversation(conversation_id: str, store: StoreDep, owner: OwnerDep) -> StoredConversation:
    stored = await store.get(conversation_id, owner)
    if stored is None:
        raise ApiError(404, f"unknown conversation_id '{quote(conversation_id)}'", field="conversation_id")
    return stored


@router.delete(
    "/v1/conversations/{conversation_id}",
    summary="Forget a stored conversation",
    status_code=204,
    responses={404: ERROR_RESPONSES[404]},
)
async def delete_conversation(conversation_id: str, store: StoreDep, owner: OwnerDep) -> None:
    if not await store.delete(conversation_id, owner):
        raise ApiError(404, f"unknown conversation_id '{quote(conversation_id)}'", field="conversation_id")
