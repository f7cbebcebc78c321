"""Events an agent streams, and the final Answer (docs/reference.md).

Every channel (SSE, OpenAI-compatible, Slack, CLI) consumes this one stream.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from service.agent.asked import Asked, Source
from tools.result import Estimate
from tools.scenario import Scenario

Language = Literal["en", "zh"]


class Answer(BaseModel):
    question: str
    language: Language
    scenario: Scenario | None = None  # null for a conceptual question
    estimate: Estimate | None = None
    answer: str  # the full text the user saw
    # its short first part (service/agent/summary.py): at most 6 lines, the verdict and the figure asked for;
    # the rest of `answer` is the full cited breakdown
    summary: str = ""
    agent: str = "offline"  # which brain answered: offline, llm, llm->offline (fallback)
    conversation_id: str | None = None
    # what the user was told about fallbacks, overruled figures, cut-off replies (the NoticeEvents' messages)
    notices: list[str] = Field(default_factory=list)
    asked: Asked | None = None  # what was asked (service/agent/asked.py); null: a plain fit question
    source: Source | None = None  # what was read from a pasted config, command line or log


class DisplayComponent(BaseModel):
    name: str
    model_role: str | None = None
    label: str  # the component's name in the display language
    formula: str = ""  # the substituted formula: numbers and symbols (prompts/<lang>/formulas.toml)


class DisplaySuggestion(BaseModel):
    change: str  # the planner's change in the display language (render.change_text)
    tradeoffs: str = ""  # what it costs, e.g. '; steps ~33% slower (recompute)'


class DisplayAssumption(BaseModel):
    field: str
    label: str  # the field's name in the display language
    value: str  # the value as the answer shows it
    reason: str


class Display(BaseModel):
    """An Estimate's panel texts in one language: the same texts the templated answer uses
    (service.agent.render.display_panels). Optional and additive: the Estimate stays as it is;
    lists run index by index with the Estimate's components, suggestions and assumptions."""

    language: Language
    verdict: str  # the answer's verdict sentence (Markdown **bold** allowed)
    components: list[DisplayComponent] = Field(default_factory=list)
    suggestions: list[DisplaySuggestion] = Field(default_factory=list)
    assumptions: list[DisplayAssumption] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    serving: list[str] = Field(default_factory=list)  # serving-capacity lines (inference only)


class ScenarioEvent(BaseModel):
    type: Literal["scenario"] = "scenario"
    scenario: Scenario


class EstimateEvent(BaseModel):
    type: Literal["estimate"] = "estimate"
    estimate: Estimate
    # not part of the event's data: the estimate's panel texts the agent rendered its answer with, as the
    # `display` event's data (render.display_texts, in the answer's language), so they are not made again
    _display: dict[str, Any] | None = PrivateAttr(None)


class AskedEvent(BaseModel):
    """What was asked and, for a paste, what was read from it; sent before the answer's text."""

    type: Literal["asked"] = "asked"
    asked: Asked
    source: Source | None = None


class TokenEvent(BaseModel):
    type: Literal["token"] = "token"
    text: str


class NoticeEvent(BaseModel):
    """Out-of-band information for the user, e.g. 'the LLM endpoint failed; offline answer follows'."""

    type: Literal["notice"] = "notice"
    message: str
    code: str | None = None
    # why, as a short slug for the operator's metrics (an LLM fallback: timeout, connection, http_429, ...);
    # not part of the event's data
    reason: str | None = Field(default=None, exclude=True)


class DoneEvent(BaseModel):
    type: Literal["done"] = "done"
    answer: Answer


class ErrorEvent(BaseModel):
    """Bad input or an impossible scenario: a clear message that says what is accepted."""

    type: Literal["error"] = "error"
    message: str
    field: str | None = None
    accepted: str | None = None
    suggestions: list[str] = Field(default_factory=list)
    detail: dict[str, Any] | None = None


AgentEvent = Annotated[
    ScenarioEvent | EstimateEvent | AskedEvent | TokenEvent | NoticeEvent | DoneEvent | ErrorEvent,
    Field(discriminator="type"),
]
