"""Asking the offline agent a question in tests: the final event, the answer text, in a language."""

from __future__ import annotations

import asyncio

from service.agent.base import ConversationState
from service.agent.events import DoneEvent, ErrorEvent
from service.agent.offline import OfflineAgent


def ask(question: str, state: ConversationState | None = None) -> DoneEvent | ErrorEvent:
    async def run() -> DoneEvent | ErrorEvent:
        last = None
        async for event in OfflineAgent().stream(question, state or ConversationState()):
            last = event
        assert isinstance(last, DoneEvent | ErrorEvent)
        return last

    return asyncio.run(run())


def answer_text(question: str) -> str:
    done = ask(question)
    assert isinstance(done, DoneEvent), done
    return done.answer.answer


def ask_in(question: str, language: str) -> str:
    async def run() -> DoneEvent | ErrorEvent:
        last = None
        async for event in OfflineAgent().stream(question, ConversationState(), language):  # type: ignore[arg-type]
            last = event
        assert isinstance(last, DoneEvent | ErrorEvent)
        return last

    done = asyncio.run(run())
    assert isinstance(done, DoneEvent), done
    return done.answer.answer
