"""What an operator sees of a running service (docs/reference.md, "Operating"; README, "Running it for a
team"): Prometheus metrics at `GET /metrics`, a request id and one access line per request (JSON with
`VRAMWISE_LOG_FORMAT=json`), and OpenTelemetry traces when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

`Observability.from_settings(settings)` is made once by the app factory; it hands the turn runner its
`AnswerObserver`, the LLM agent its callbacks, FastAPI its telemetry settings, and `install(app, agent)`
adds the outermost middleware (request ids, HTTP metrics, refusals, access lines, `/metrics`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from service.observability.answers import AnswerObserver
from service.observability.metrics import ServiceMetrics
from service.observability.tracing import fastapi_telemetry, install_tracing

if TYPE_CHECKING:
    from fastapi import FastAPI

    from service.settings import Settings


@dataclass
class Observability:
    settings: Settings
    metrics: ServiceMetrics | None
    tracer_provider: Any | None
    answers: AnswerObserver

    @classmethod
    def from_settings(cls, settings: Settings) -> Observability:
        metrics = ServiceMetrics() if settings.metrics else None
        provider = install_tracing(settings.otel_exporter_otlp_endpoint)
        observer = AnswerObserver(metrics, tracing=provider is not None, log_questions=settings.log_questions)
        return cls(settings=settings, metrics=metrics, tracer_provider=provider, answers=observer)

    @property
    def tracing(self) -> bool:
        return self.tracer_provider is not None

    def llm_callbacks(self) -> Callable[[], list[Any]] | None:
        """Makes one LLM request's LangChain callback handlers (None when there is nothing to record)."""
        if self.metrics is None and not self.tracing:
            return None
        from service.observability.llm import LlmCallMeter

        metrics, tracing = self.metrics, self.tracing
        return lambda: [LlmCallMeter(metrics, tracing=tracing)]

    def fastapi_telemetry(self) -> dict[str, Any] | None:
        return fastapi_telemetry(self.tracer_provider)

    def install(self, app: FastAPI, agent: Any) -> None:
        """The outermost middleware (call after every other `add_middleware`), and the worker-pool gauge."""
        from service.observability.endpoint import MetricsEndpoint
        from service.observability.requests import ObservabilityMiddleware

        endpoint = None
        if self.metrics is not None:
            endpoint = MetricsEndpoint(
                self.metrics, api_keys=self.settings.api_keys, token=self.settings.metrics_token
            )
            worker_pids = getattr(agent, "worker_pids", None)
            self.metrics.watch_workers(lambda: len(worker_pids()) if worker_pids is not None else 0)
        level = logging.INFO if self.settings.log_format == "json" else logging.DEBUG
        app.add_middleware(
            ObservabilityMiddleware,
            metrics=self.metrics,
            metrics_endpoint=endpoint,
            access_level=level,
            routes=app.router.routes,
            tracing=self.tracing,
        )
        app.state.observability = self

    def count_estimate(self, estimate: Any) -> None:
        """A `POST /v1/estimate` answer: its Hub look-up, if it made one."""
        from service.observability.answers import estimate_hub_outcome

        outcome = estimate_hub_outcome(estimate)
        if outcome is not None and self.metrics is not None:
            self.metrics.hub_lookups.labels(outcome).inc()

    def count_hub_error(self, code: str) -> None:
        """A Hub look-up that failed (`hub_gated`, `hub_not_found`, ...) outside a chat answer."""
        if self.metrics is not None:
            self.metrics.hub_lookups.labels(code).inc()

    def count_coach_answer(self, language: str, graded: bool) -> None:
        """A coach answer (`POST /v1/coach/answers`): task `quiz` when graded, `hint` otherwise."""
        if self.metrics is not None:
            self.metrics.answers.labels("coach", "quiz" if graded else "hint", language, "offline").inc()
