"""Counting answers as they stream: the turn runner (so every channel that answers through it: web, openai,
slack) shows each event of a turn's answer to an `AnswerObservation` (`AnswerObserver.observe`), which counts.

It reads only what the serving process already has: an answer made in a worker process arrives as encoded
events (service/api/sse_wire.py) whose scenario and estimate are left as JSON; their task and Hub
look-up are read from that JSON's text (`raw_json`), never decoded into models on the serving loop.
"""

from __future__ import annotations

import re
import time
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from service.agent.events import AgentEvent, Answer, DoneEvent, ErrorEvent, NoticeEvent
from service.api.sse_wire import EncodedAnswer
from service.observability.context import RequestRecord, current_request
from service.observability.metrics import ServiceMetrics
from service.observability.tracing import span
from tools.result import Estimate

if TYPE_CHECKING:
    from service.api.turns import PreparedTurn

_TASK = re.compile(r'"task":\s*"([a-z_]+)"')
HUB_CODES = {"model.hub": "fetched", "model.hub_cache": "cache"}
_HUB_CODE = '"code":"model.hub'
CONCEPT_TASK = "concept"  # an answer without a scenario (a conceptual question)
NO_TASK = "unstated"  # a scenario without a task (the estimator's default, inference, applied)
# service/agent/llm/agent.py's notice codes: an overruled figure (an invented one, a wrong verdict word, a
# figure given to the wrong component), and the notices that hand the question to the offline agent
OVERRULE_NOTICES = {"grounding", "verdict", "misattributed"}
FALLBACK_NOTICES = {"llm_unavailable", "cut_off", *OVERRULE_NOTICES}


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
        at = raw.find(_HUB_CODE)  # one search of the estimate's JSON: model.hub or model.hub_cache
        if at < 0:
            return None
        return "cache" if raw.startswith("_cache", at + len(_HUB_CODE)) else "fetched"
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

    def store_call(self, operation: str) -> AbstractContextManager[Any]:
        """Times one conversation-store call of a turn (and spans it)."""
        if self.tracing:
            return _TracedStoreCall(self.metrics, operation)
        return _StoreCall(self.metrics, operation) if self.metrics is not None else nullcontext()

    def observe(self, turn: PreparedTurn) -> AnswerObservation:
        """The observation of one turn's answer: `see` each event, `close` at its end (in the same task:
        with tracing on, the answer's `agent` span is the current one in between)."""
        record = current_request.get()
        if record is not None:
            record.conversation_id = turn.conversation_id
            if self.log_questions:
                record.question = turn.question
        return AnswerObservation(self.metrics, record, tracing=self.tracing)


class _StoreCall:
    def __init__(self, metrics: ServiceMetrics | None, operation: str) -> None:
        self.metrics = metrics
        self.operation = operation
        self.started = 0.0

    def __enter__(self) -> None:
        self.started = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        if self.metrics is not None:
            self.metrics.child(self.metrics.store_seconds, self.operation).observe(
                time.perf_counter() - self.started
            )


class _TracedStoreCall(_StoreCall):
    def __enter__(self) -> None:
        self._span = span("store", **{"db.operation": self.operation})
        self._span.__enter__()
        super().__enter__()

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self._span.__exit__(*exc)


class AnswerObservation:
    """What one answer's events said so far, counted as they pass: the first event's latency, notices,
    the answer or the error; the channel's active streams while it runs."""

    def __init__(
        self, metrics: ServiceMetrics | None, record: RequestRecord | None, *, tracing: bool
    ) -> None:
        self.metrics = metrics
        self.record = record
        self.channel = (record.channel if record is not None else None) or "other"
        self.started = record.started if record is not None else time.perf_counter()
        self.first = True
        self.fallback: str | None = None
        self._span = span("agent", channel=self.channel) if tracing else None
        if self._span is not None:
            self._span.__enter__()
        if metrics is not None:
            metrics.child(metrics.active_streams, self.channel).inc()

    def see(self, ev: AgentEvent) -> None:
        metrics = self.metrics
        if isinstance(ev, DoneEvent) and self.record is not None:
            self.record.agent = ev.answer.agent
        if metrics is None:
            return
        if self.first:
            self.first = False
            metrics.child(metrics.first_event_seconds, self.channel).observe(
                time.perf_counter() - self.started
            )
        if isinstance(ev, NoticeEvent):
            if ev.code in OVERRULE_NOTICES:
                metrics.grounding_overrules.inc()
            if ev.code in FALLBACK_NOTICES:
                self.fallback = ev.reason or ev.code
        elif isinstance(ev, DoneEvent):
            self._answered(metrics, ev.answer)
        elif isinstance(ev, ErrorEvent):
            reason = error_reason(ev)
            metrics.errors.labels(reason).inc()
            if reason.startswith("hub_"):
                metrics.hub_lookups.labels(reason).inc()

    def _answered(self, metrics: ServiceMetrics, answer: Answer) -> None:
        labels = (self.channel, answer_task(answer), answer.language, answer.agent)
        metrics.child(metrics.answers, *labels).inc()
        metrics.child(metrics.answer_seconds, self.channel).observe(time.perf_counter() - self.started)
        if answer.agent.startswith("llm->"):
            metrics.llm_fallbacks.labels(self.fallback or "other").inc()
        outcome = hub_outcome(answer)
        if outcome is not None:
            metrics.hub_lookups.labels(outcome).inc()

    def failed(self) -> None:
        """The agent raised: the turn runner answers with an error event of its own."""
        if self.metrics is not None:
            self.metrics.errors.labels("answer_failed").inc()

    def close(self) -> None:
        if self.metrics is not None:
            self.metrics.child(self.metrics.active_streams, self.channel).dec()
        if self._span is not None:
            self._span.__exit__(None, None, None)
