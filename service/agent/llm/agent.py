"""The LLM agent: LangChain `create_agent` over the estimator tools, grounded and with a fallback.

One request: build the tools (recording into a per-request ToolRecorder), a chat model (fresh
HTTP clients), and the agent graph; stream it with `stream_mode="messages"`. LLM text passes
through a GroundingGate sentence by sentence, so only checked text reaches the user. A tool run
becomes a ScenarioEvent + EstimateEvent. On an ungrounded figure the LLM stream stops, a
`grounding` notice follows and the templated explanation answers; on an endpoint failure
(timeout, 5xx, 429, connection refused, arguments the model cannot fix) the offline agent answers
after an `llm_unavailable` notice. The question is never lost.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage

from service.agent.base import Agent, ConversationState
from service.agent.events import (
    AgentEvent,
    Answer,
    DoneEvent,
    EstimateEvent,
    Language,
    NoticeEvent,
    ScenarioEvent,
    TokenEvent,
)
from service.agent.inquiry_answer import asked_of_answer
from service.agent.llm.endpoint import ChatModelHandle
from service.agent.llm.grounding import AllowedFigures, Figure, GroundingGate
from service.agent.llm.guard import ToolCallCutOff, ToolGuard
from service.agent.llm.stated import Overruled, question_job_fields
from service.agent.llm.tools import ToolRecorder, ToolRun, build_tools
from service.agent.offline.asks import asked_figure
from service.agent.offline.language import detect_language
from service.agent.offline.parser import normalise
from service.agent.paste.split import split_message
from service.agent.prompt_files import read_prompt
from service.agent.summary import summary_lines, text_summary
from tools.errors import ScenarioError
from tools.result import Estimate
from tools.scenario import Scenario

logger = logging.getLogger("vramwise.llm")

MAX_HISTORY_TURNS = 4  # the last 2 exchanges feed a follow-up (the previous scenario is in the system prompt)
MAX_HISTORY_TURN_CHARS = 400  # an earlier turn is resent only this long: a summary, not a breakdown
RECURSION_LIMIT = 24  # graph steps per request: a few tool rounds, then the answer


def _text_of(chunk: AIMessageChunk) -> str:
    content = chunk.content
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") if isinstance(part, dict) else str(part)
        for part in content
        if not isinstance(part, dict) or part.get("type") in (None, "text")
    )


def _history(state: ConversationState) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    for turn in state.turns[-MAX_HISTORY_TURNS:]:
        content = turn.content
        if len(content) > MAX_HISTORY_TURN_CHARS:
            content = content[:MAX_HISTORY_TURN_CHARS] + " [...]"
        messages.append(HumanMessage(content) if turn.role == "user" else AIMessage(content))
    return messages


def _notices(language: Language) -> dict[str, Any]:
    return json.loads(read_prompt(language, "llm_notices.json"))


def system_prompt(language: Language, state: ConversationState) -> str:
    prompt = read_prompt(language, "system_prompt.md")
    if state.scenario is not None:
        previous = json.dumps(state.scenario.stated(), ensure_ascii=False, default=str)
        prompt += "\n\n" + read_prompt(language, "llm_context.md").replace("{previous_scenario}", previous)
    return prompt


class LLMAgent:
    """`Agent` backed by an OpenAI-compatible chat model; falls back to `fallback` (the offline agent)."""

    name = "llm"

    def __init__(
        self,
        chat_model_factory: Callable[[], ChatModelHandle],
        fallback: Agent,
        *,
        recursion_limit: int = RECURSION_LIMIT,
        callbacks: Callable[[], list[Any]] | None = None,
    ) -> None:
        self._chat_model_factory = chat_model_factory
        self._fallback = fallback
        self._recursion_limit = recursion_limit
        self._callbacks = callbacks  # makes one request's LangChain callback handlers (the service's metrics)

    async def stream(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> AsyncIterator[AgentEvent]:
        lang: Language = language or detect_language(question, default=state.language or "en")
        # a paste is read by real parsers (service/agent/paste), not guessed by the model
        if split_message(question) is not None:
            async for event in self._fallback.stream(question, state, lang):
                yield event
            return
        run = _Run(question, state, lang)
        handle: ChatModelHandle | None = None
        failure: tuple[str, str, dict[str, Any]] | None = None  # (notice code, reason key, its values)
        failure_slug = "empty_answer"  # the same as a metrics label (service/observability)
        violation: list[Figure] = []
        try:
            handle = self._chat_model_factory()
            graph = create_agent(
                handle.model,
                build_tools(run.recorder),
                system_prompt=system_prompt(lang, state),
                middleware=[ToolGuard(run.recorder)],
            )
            inputs = {"messages": [*_history(state), HumanMessage(question)]}
            config: dict[str, Any] = {"recursion_limit": self._recursion_limit}
            if self._callbacks is not None:
                config["callbacks"] = self._callbacks()
            async with aclosing(graph.astream(inputs, config=config, stream_mode="messages")) as items:
                async for chunk, meta in items:
                    for event in run.tool_events():
                        yield event
                    if meta.get("langgraph_node") != "model" or not isinstance(chunk, AIMessageChunk):
                        continue
                    run.finish_reason = chunk.response_metadata.get("finish_reason") or run.finish_reason
                    text = _text_of(chunk)
                    if not text:
                        continue
                    for event in run.feed(text, chunk.id):
                        yield event
                    if run.violation or run.capped:
                        break  # closing the stream cancels the LLM call: nothing more reaches the user
            if not run.violation:
                for event in run.tool_events():
                    yield event
                for event in run.finish():
                    yield event
                if run.capped:
                    yield run.notice("too_long", _notices(lang)["too_long"].format(chars=run.gate.max_chars))
                elif (
                    run.finish_reason == "length"
                ):  # the answer hit the token limit: said, not shown as whole
                    yield run.notice("truncated", _notices(lang)["truncated"])
            violation = run.violation
            if not violation and not run.gate.released.strip():
                failure = ("llm_unavailable", "empty", {})
        except Exception as err:  # any endpoint or agent failure: the offline agent answers
            failure, failure_slug = _describe(err), failure_code(err)
            logger.warning("LLM agent failed (%s: %s); falling back to the offline agent", failure, err)
            logger.debug("LLM agent failure", exc_info=err)
        finally:
            if handle is not None:
                try:
                    await handle.aclose()
                except Exception:  # closing a broken connection must not hide the answer
                    logger.debug("closing the chat model's HTTP clients failed", exc_info=True)

        if violation:
            async for event in self._after_violation(run, violation):
                yield event
        elif failure is not None:
            code, key, values = failure
            reason = _notices(lang)["reasons"][key].format(**values)
            async for event in self._offline(run, code, failure_slug, reason=reason):
                yield event
        else:
            yield DoneEvent(answer=run.answer(run.gate.released, agent="llm"))

    async def _after_violation(self, run: _Run, violation: list[Figure]) -> AsyncIterator[AgentEvent]:
        figure = ", ".join(f.text for f in violation)
        estimate = run.last_estimate
        if estimate is None:  # figures without any tool run: the offline agent answers from scratch
            async for event in self._offline(run, "grounding", "grounding", figure=figure):
                yield event
            return
        from service.agent.render import render_answer

        notices = _notices(run.language)
        code = run.violation_kind
        yield run.notice(code, notices[code].format(figure=figure), reason="grounding")
        prefix = notices["separator"] if run.gate.released.strip() else ""
        templated = render_answer(estimate, run.language)
        for piece in _paragraphs(prefix + templated):
            yield TokenEvent(text=piece)
        yield DoneEvent(answer=run.answer(run.gate.released + prefix + templated, agent="llm->offline"))

    async def _offline(self, run: _Run, code: str, slug: str, **fmt: str) -> AsyncIterator[AgentEvent]:
        notices = _notices(run.language)
        yield run.notice(code, notices[code].format(**fmt), reason=slug)
        prefix = notices["separator"] if run.gate.released.strip() else ""
        if prefix:
            yield TokenEvent(text=prefix)
        async for event in self._fallback.stream(run.question, run.state, language=run.language):
            if isinstance(event, DoneEvent):
                answer = event.answer.model_copy(
                    update={
                        "answer": run.gate.released + prefix + event.answer.answer,
                        "agent": f"llm->{event.answer.agent}",
                        "notices": [*run.notices, *event.answer.notices],
                        "conversation_id": event.answer.conversation_id or run.state.conversation_id,
                    }
                )
                yield DoneEvent(answer=answer)
            else:
                yield event


class _Run:
    """The mutable state of one request: tool records, allowed figures, the grounding gate."""

    def __init__(self, question: str, state: ConversationState, language: Language) -> None:
        self.question = question
        self.state = state
        self.language = language
        self.recorder = ToolRecorder(
            previous_scenario=state.scenario, question=question, question_fields=question_job_fields(question)
        )
        self.notices: list[str] = []  # every notice's message, in order (Answer.notices)
        self._overruled_seen = 0
        self.finish_reason: str | None = None  # the last model reply's finish_reason
        self.capped = False  # the answer reached the gate's length cap
        self.violation_kind = "grounding"  # grounding, verdict or misattributed (GateResult.kind)
        self.allowed = AllowedFigures()
        # Figures in the question or in earlier turns (a client may send any assistant turn) are never
        # grounds: only the estimator's. A follow-up may cite the previous scenario's figures, recomputed.
        if state.scenario is not None:
            allow_previous(self.allowed, state.scenario)
        self.allowed.add_echo(question)
        for turn in state.turns:
            self.allowed.add_echo(turn.content)
        self.gate = GroundingGate(self.allowed)
        self.violation: list[Figure] = []
        self._runs_seen = 0
        self._message_id: str | None = None

    @property
    def last_estimate(self) -> Estimate | None:
        estimates = self.recorder.estimates
        return estimates[-1] if estimates else None

    @property
    def last_scenario(self) -> Scenario | None:
        """The stated scenario of the last estimate (what a follow-up modifies), as the offline agent keeps it."""
        runs = [r for r in self.recorder.runs if r.estimate is not None]
        return runs[-1].scenario if runs else None

    def tool_events(self) -> list[AgentEvent]:
        """ScenarioEvent + EstimateEvent for each tool run since the last call; widen the allowed figures."""
        events: list[AgentEvent] = []
        for tool_run in self.recorder.runs[self._runs_seen :]:
            allow_tool_run(self.allowed, tool_run)
            if tool_run.estimate is not None:
                events.append(ScenarioEvent(scenario=tool_run.scenario or tool_run.estimate.scenario))
                events.append(EstimateEvent(estimate=tool_run.estimate))
        self._runs_seen = len(self.recorder.runs)
        for overruled in self.recorder.overruled[self._overruled_seen :]:
            events.append(self.notice("overruled", overruled_text(overruled, self.language)))
        self._overruled_seen = len(self.recorder.overruled)
        return events

    def notice(self, code: str, message: str, reason: str | None = None) -> NoticeEvent:
        """A NoticeEvent, remembered for the Answer's `notices`; `reason` the operator's metrics label."""
        self.notices.append(message)
        return NoticeEvent(code=code, message=message, reason=reason)

    def feed(self, text: str, message_id: str | None) -> list[AgentEvent]:
        events: list[AgentEvent] = []
        if message_id and self._message_id and message_id != self._message_id:
            # a new model message (after a tool round): check what is left of the previous one
            events += self._gate_events(self.gate.flush())
            if self.violation:
                return events
            tail = self.gate.released[-2:]
            if self.gate.released and tail != "\n\n":
                events += self._gate_events(self.gate.feed("\n\n" if not tail.endswith("\n") else "\n"))
        if message_id:
            self._message_id = message_id
        events += self._gate_events(self.gate.feed(text))
        return events

    def finish(self) -> list[AgentEvent]:
        return self._gate_events(self.gate.flush())

    def _gate_events(self, result: Any) -> list[AgentEvent]:
        events: list[AgentEvent] = []
        if result.released:
            events.append(TokenEvent(text=result.released))
        if result.violations:
            self.violation = result.violations
            self.violation_kind = result.kind
        if result.capped:
            self.capped = True
        return events

    def answer(self, text: str, *, agent: str) -> Answer:
        estimate, scenario = self.last_estimate, self.last_scenario
        asked, lead = None, None
        if estimate is not None and scenario is not None:  # an inverse question or comparison: as offline
            asked, estimate, lead = asked_of_answer(self.question, scenario, estimate, self.language)
        return Answer(
            question=self.question,
            language=self.language,
            scenario=scenario,
            estimate=estimate,
            answer=text,
            summary=(
                "\n".join(
                    summary_lines(estimate, self.language, asked_figure(normalise(self.question)), lead=lead)
                )
                if estimate is not None
                else text_summary(text)
            ),
            agent=agent,
            conversation_id=self.state.conversation_id,
            notices=list(self.notices),
            asked=asked,
        )


def allow_tool_run(allowed: AllowedFigures, tool_run: ToolRun) -> None:
    """Widen `allowed` by everything a tool run showed the model.

    The estimate's own figures (service.agent.figures), every byte count in the tool's JSON, and
    every figure written in its text (formula constants like "4096 MiB", intermediate products in
    `substituted`, GPU alias notes like "H100 NVL (94 GB)").
    """
    from service.agent.figures import figures_of

    allowed.add_bytes(tool_run.figures)
    allowed.add_text(tool_run.output)
    if tool_run.estimate is not None:
        est = tool_run.estimate
        allowed.add_bytes(figures_of(est))
        allowed.verdicts.append((est.per_gpu.total_bytes, est.fits))
        allowed.verdicts += [(s.total_bytes, s.fits) for s in est.suggestions]
        allowed.components += [(c.bytes, c.name) for c in est.components]


def allow_previous(allowed: AllowedFigures, scenario: Scenario) -> None:
    """The previous scenario's figures, estimated again (the tool's, not the text that showed them)."""
    from service.agent.figures import figures_of
    from service.hub import estimate_any_model

    try:
        allowed.add_bytes(figures_of(estimate_any_model(scenario, plan=True)))
    except (ScenarioError, ValueError, OSError):  # refused now (a catalog change): no figures from it
        logger.debug("the previous scenario could not be estimated again", exc_info=True)


def _paragraphs(text: str) -> list[str]:
    """Split templated text into paragraph-sized TokenEvents (keeps the separators)."""
    pieces: list[str] = []
    start = 0
    while True:
        idx = text.find("\n\n", start)
        if idx < 0:
            if start < len(text):
                pieces.append(text[start:])
            return pieces
        pieces.append(text[start : idx + 2])
        start = idx + 2


def _describe(err: BaseException) -> tuple[str, str, dict[str, Any]]:
    """(notice code, reason key in llm_notices.json's `reasons`, its values): words, never class names."""
    import openai

    from service.agent.llm.tools import ToolArgumentsExhausted

    if isinstance(err, ToolCallCutOff):
        return "cut_off", "cut_off", {}
    if isinstance(err, openai.APITimeoutError):
        return "llm_unavailable", "timeout", {}
    if isinstance(err, openai.APIConnectionError):
        return "llm_unavailable", "connection", {}
    if isinstance(err, openai.APIStatusError):
        key = "rate_limited" if err.status_code == 429 else "http"
        return "llm_unavailable", key, {"status": err.status_code}
    if isinstance(err, ToolArgumentsExhausted):
        return "llm_unavailable", "arguments", {}
    return "llm_unavailable", "other", {}


def failure_code(err: BaseException) -> str:
    """The failure as a metrics label: timeout, connection, http_<status>, tool_arguments, cut_off, other."""
    import openai

    from service.agent.llm.tools import ToolArgumentsExhausted

    if isinstance(err, ToolCallCutOff):
        return "cut_off"
    if isinstance(err, openai.APITimeoutError):
        return "timeout"
    if isinstance(err, openai.APIConnectionError):
        return "connection"
    if isinstance(err, openai.APIStatusError):
        return f"http_{err.status_code}"
    if isinstance(err, ToolArgumentsExhausted):
        return "tool_arguments"
    return "other"


def overruled_text(overruled: Overruled, language: Language) -> str:
    """The notice for a job field where the question's words replaced the model's."""
    notices = _notices(language)
    key = "overruled_missing" if overruled.model_value is None else "overruled"
    return notices[key].format(
        field=overruled.field, model_value=overruled.model_value, question_value=overruled.question_value
    )
