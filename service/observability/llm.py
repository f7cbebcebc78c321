"""The LLM agent's calls, as LangChain callbacks (the LLM agent passes them to its graph, service/agent/llm):
each chat-model call is counted by outcome, its characters sent and received (and tokens, when the endpoint
reports usage) are added up, and, with tracing on, it is one `llm` span, a child of the agent's.

The handler runs inline (`run_inline`) on the agent's event loop: the counters are thread-safe, and the
span's parent is the agent span current in that loop's task (asyncio carries the context across).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from service.agent.llm.agent import failure_code
from service.observability.metrics import ServiceMetrics


def _characters(message: Any) -> int:
    content = getattr(message, "content", "")
    size = len(content) if isinstance(content, str) else len(str(content))
    for call in getattr(message, "tool_calls", None) or []:
        size += len(str(call.get("name", ""))) + len(str(call.get("args", "")))
    return size


class LlmCallMeter(BaseCallbackHandler):
    """Counts each chat-model call of one request in `metrics` (None: metrics off) and spans it when
    `tracing`. A call the agent stops (a figure overruled: it closes the stream) reports no end of its own:
    when the request's graph ends, such a call is counted `stopped` and its span ended."""

    run_inline = True  # called on the agent's loop, not in an executor thread

    def __init__(self, metrics: ServiceMetrics | None, *, tracing: bool) -> None:
        self.metrics = metrics
        self.tracing = tracing
        self._spans: dict[UUID, Any] = {}
        self._open: set[UUID] = set()

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._open.add(run_id)
        if self.metrics is not None:
            sent = sum(_characters(m) for batch in messages for m in batch)
            self.metrics.llm_characters.labels("sent").inc(sent)
        if self.tracing:
            from opentelemetry import trace

            model = (kwargs.get("invocation_params") or {}).get("model") or ""
            self._spans[run_id] = trace.get_tracer("vramwise").start_span(
                "llm", attributes={"gen_ai.request.model": str(model)}
            )

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if self.metrics is not None:
            self.metrics.llm_requests.labels("ok").inc()
            received = 0
            for generations in response.generations:
                for generation in generations:
                    message = getattr(generation, "message", None)
                    received += _characters(message) if message is not None else len(generation.text)
                    usage = getattr(message, "usage_metadata", None) or {}
                    if usage:
                        self.metrics.llm_tokens.labels("sent").inc(usage.get("input_tokens", 0))
                        self.metrics.llm_tokens.labels("received").inc(usage.get("output_tokens", 0))
            self.metrics.llm_characters.labels("received").inc(received)
        self._end(run_id, None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if self.metrics is not None:
            self.metrics.llm_requests.labels(failure_code(error)).inc()
        self._end(run_id, error)

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        if parent_run_id is None:
            self._stop_open_calls()

    def on_chain_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        if parent_run_id is None:
            self._stop_open_calls()

    def _stop_open_calls(self) -> None:
        for run_id in list(self._open):
            if self.metrics is not None:
                self.metrics.llm_requests.labels("stopped").inc()
            self._end(run_id, None)

    def _end(self, run_id: UUID, error: BaseException | None) -> None:
        self._open.discard(run_id)
        current = self._spans.pop(run_id, None)
        if current is None:
            return
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            current.record_exception(error)
            current.set_status(Status(StatusCode.ERROR, type(error).__name__))
        current.end()
