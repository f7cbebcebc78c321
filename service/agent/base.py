"""The one agent interface every channel talks to.

A conversation is a `ConversationState` (persisted by the service's store); an agent
reads it, streams `AgentEvent`s for one question and ends with exactly one `DoneEvent`
or `ErrorEvent`. The caller appends the turn to the state afterwards (see `record_turn`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from service.agent.events import AgentEvent, Answer, Language
from tools.scenario import Scenario


class Turn(BaseModel):
    role: Literal["user", "assistant"]
    content: str


class ConversationState(BaseModel):
    conversation_id: str | None = None
    language: Language | None = None
    turns: list[Turn] = Field(default_factory=list)
    scenario: Scenario | None = None  # the last scenario: follow-ups modify it

    def record_turn(self, question: str, answer: Answer) -> None:
        self.turns.append(Turn(role="user", content=question))
        self.turns.append(Turn(role="assistant", content=answer.answer))
        if answer.scenario is not None:
            self.scenario = answer.scenario
        self.language = answer.language


@runtime_checkable
class Agent(Protocol):
    name: str

    def stream(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Answer one question; yields events, the last one a DoneEvent or ErrorEvent."""
        ...
