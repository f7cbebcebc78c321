"""Counting answers as they stream: `AnswerObserver.watch` wraps the agent's event stream of one turn (the
turn runner's, so every channel that answers through it: web, openai, slack) and counts what passes.

It reads only what the serving process already has: an answer made in a worker process arrives as encoded
events (service/api/sse_wire.py) whose scenario and estimate are left as JSON; their task and Hub
look-up are read from that JSON's text (`raw_json`), never decoded into models on the serving loop.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from service.agent.events import AgentEvent, Answer, DoneEvent, ErrorEvent, NoticeEvent
from service.api.sse_wire import EncodedAnswer
from service.observability.context import current_request
from service.observability.metrics import ServiceMetrics
from service.observability.tracing import span
from tools.result import Estimate

if TYPE_CHECKING:
    from service.api.turns import PreparedTurn

_TASK = re.compile(r'"task":\s*"([a-z_]+)"')
HUB_CODES = {"model.hub": "fetched", "model.hub_cache": "cache"}
CONCEPT_TASK = "concept"  # an answer without a scenario (a conceptual question)
NO_TASK = "unstated"  # a scenario without a task (the estimator's default, inference, applied)
FALLBACK_NOTICES = {"llm_unavailable", "grounding"}  # service/agent/llm/agent.py's notice codes


def answer_task(answer: Answer) -> str:
    if isinstance(answer, EncodedAnswer):
        raw = answer.raw_json("scenario")
        if raw is None or raw == "null":
            return CONCEPT_TASK
        found = _TASK.search(raw)
        return found.group(1) if found else NO_TASK
    if answer.scenario is None:
        return CONCEPT_TASK
    return answer.scenario.task or NO_TASK


def hub_outcome(answer: Answer) -> str | None:
    """'fetched' or 'cache' when the answer's model came from the Hub, else None."""
    if isinstance(answer, EncodedAnswer):
        raw = answer.raw_json("estimate") or ""
        for code, outcome in HUB_CODES.items():
            if f'"code":"{code}"' in raw:
                return outcome
        return None
    return estimate_hub_outcome(answer.estimate)


def estimate_hub_outcome(estimate: Estimate | None) -> str | None:
    """'fetched' or 'cache' when the estimate's model came from the Hub (its `model.hub*` assumption)."""
    if estimate is None:
        return None
    for assumption in estimate.assumptions:
        if assumption.code in HUB_CODES:
            return HUB_CODES[assumption.code]
    return None


def error_reason(ev: ErrorEvent) -> str:
    """A refused question's reason: unknown_model (or the Hub's own code), no_model, unknown_gpu,
    bad_scenario; answer_failed when the service failed (no field)."""
    detail = ev.detail or {}
    code = detail.get("code")
    if isinstance(code, str) and code.startswith("hub_"):
        return code
    if ev.field == "model":
        return "unknown_model" if "error" in detail else "no_model"
    if ev.field == "gpu":
        return "unknown_gpu"
    return "bad_scenario" if ev.field else "answer_failed"


class AnswerObserver:
    """Counts one app's answers in its `ServiceMetrics` (None: metrics off) and traces them (`tracing`)."""

    def __init__(self, metrics: ServiceMetrics | None, *, tracing: bool, log_questions: bool) -> None:
        self.metrics = metrics
        self.tracing = tracing
        self.log_questions = log_questions

    @contextmanager
    def store_call(self, operation: str) -> Iterator[None]:
        """Times one conversation-store call of a turn (and spans it)."""
        started = time.perf_counter()
        with span("store", **{"db.operation": operation}) if self.tracing else nullcontext():
            try:
                yield
            finally:
                if self.metrics is not None:
                    self.metrics.store_seconds.labels(operation).observe(time.perf_counter() - started)

    async def watch(self, turn: PreparedTurn, events: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
        """`events` as they are, counted: the first event's latency, notices, the answer or the error."""
        record = current_request.get()
        channel = (record.channel if record is not None else None) or "other"
        started = record.started if record is not None else time.perf_counter()
        if record is not None:
            record.conversation_id = turn.conversation_id
            if self.log_questions:
                record.question = turn.question
        metrics = self.metrics
        tally = _Tally()
        if metrics is not None:
            metrics.active_streams.labels(channel).inc()
        try:
            with span("agent", channel=channel) if self.tracing else nullcontext():
                async with aclosing(events) as inner:
                    async for ev in inner:
                        if metrics is not None:
                            tally.see(ev, metrics, channel, started)
                        if record is not None and isinstance(ev, DoneEvent):
                            record.agent = ev.answer.agent
                        yield ev
        except Exception:  # the agent failed: the turn runner answers with an error event
            if metrics is not None:
                metrics.errors.labels("answer_failed").inc()
            raise
        finally:
            if metrics is not None:
                metrics.active_streams.labels(channel).dec()


class _Tally:
    """What one answer's events said so far."""

    def __init__(self) -> None:
        self.first = True
        self.fallback: str | None = None

    def see(self, ev: Any, metrics: ServiceMetrics, channel: str, started: float) -> None:
        if self.first:
            self.first = False
            metrics.first_event_seconds.labels(channel).observe(time.perf_counter() - started)
        if isinstance(ev, NoticeEvent):
            if ev.code == "grounding":
                metrics.grounding_overrules.inc()
            if ev.code in FALLBACK_NOTICES:
                self.fallback = ev.reason or ev.code
        elif isinstance(ev, DoneEvent):
            answer = ev.answer
            metrics.answers.labels(channel, answer_task(answer), answer.language, answer.agent).inc()
            metrics.answer_seconds.labels(channel).observe(time.perf_counter() - started)
            if answer.agent.startswith("llm->"):
                metrics.llm_fallbacks.labels(self.fallback or "unknown").inc()
            outcome = hub_outcome(answer)
            if outcome is not None:
                metrics.hub_lookups.labels(outcome).inc()
        elif isinstance(ev, ErrorEvent):
            reason = error_reason(ev)
            metrics.errors.labels(reason).inc()
            if reason.startswith("hub_"):
                metrics.hub_lookups.labels(reason).inc()
