"""The `vramwise` extension object of `/v1/chat/completions` answers, and the notices in their text.

OpenAI clients show only the message text, so the notices (a fallback to the offline assistant, a
figure overruled, a cut-off reply) are written at its end, one quoted line each; clients that know
VRAMwise read them, with the agent that answered and what was asked, from `vramwise` (on the last
chunk when streaming).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from service.agent.asked import Asked
from service.agent.events import AgentEvent, DoneEvent, NoticeEvent


class VramwiseExtension(BaseModel):
    agent: str | None = Field(default=None, description="which brain answered: offline, llm, llm->offline")
    notices: list[str] = Field(default_factory=list, description="what the user was told, in order")
    asked: Asked | None = Field(default=None, description="what was asked (docs/reference.md 'Answer')")


class ExtensionCollector:
    """Follows one answer's events and makes its extension object and notice lines."""

    def __init__(self) -> None:
        self.extension = VramwiseExtension()

    def see(self, event: AgentEvent) -> None:
        if isinstance(event, NoticeEvent) and event.message not in self.extension.notices:
            self.extension.notices.append(event.message)
        elif isinstance(event, DoneEvent):
            answer = event.answer
            notices = self.extension.notices + [n for n in answer.notices if n not in self.extension.notices]
            self.extension = VramwiseExtension(agent=answer.agent, notices=notices, asked=answer.asked)

    def notices_text(self) -> str:
        """The notices as the end of the message text ('' without any)."""
        if not self.extension.notices:
            return ""
        return "\n\n" + "\n".join(f"> {notice}" for notice in self.extension.notices)
