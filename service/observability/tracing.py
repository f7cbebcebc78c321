"""OpenTelemetry traces, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the OTLP/HTTP base URL of a collector,
e.g. http://otel-collector:4318): FastAPI's own telemetry makes a span per request (`FastAPI(telemetry=
...)`, fastapi/telemetry/_api.py), and the service adds child spans for the agent, the estimator, the
store, the Hub look-up and each LLM call (`span(...)`).

The SDK and the OTLP exporter are the optional `otel` extra (`pip install 'vramwise[otel]'`); without
them, or without the endpoint, nothing is exported and `span` is a no-op of the OpenTelemetry API (which
FastAPI itself depends on). The exporter reads the standard variables itself (`OTEL_EXPORTER_OTLP_*`,
`OTEL_BSP_SCHEDULE_DELAY`, ...); `OTEL_SERVICE_NAME` names the service (default `vramwise`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

log = logging.getLogger(__name__)

TRACER_NAME = "vramwise"


def install_tracing(endpoint: str | None) -> Any | None:
    """The tracer provider exporting to `endpoint` over OTLP/HTTP (protobuf), made the process's global one
    (OpenTelemetry's own convention: instrumented code asks `trace.get_tracer`); None when no endpoint is
    set or the `otel` extra is missing (a warning says which)."""
    if not endpoint:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed "
            "(pip install 'vramwise[otel]'): no traces are exported"
        )
        return None
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):  # configured already (an earlier app in this process)
        return current
    name = os.environ.get("OTEL_SERVICE_NAME") or "vramwise"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint + /v1/traces
    trace.set_tracer_provider(provider)
    return provider


def fastapi_telemetry(provider: Any | None) -> dict[str, Any] | None:
    """`FastAPI(telemetry=...)`: request spans on our provider, no OTel metrics or logs (metrics are
    Prometheus's, logs the service's own); None (FastAPI's defaults) when tracing is off."""
    if provider is None:
        return None
    return {"tracer_provider": provider, "metrics": False, "logs": False}


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A child span of the current one (a no-op span when no tracer provider is installed)."""
    with trace.get_tracer(TRACER_NAME).start_as_current_span(name, attributes=attributes or None) as current:
        yield current


def tag_current_span(request_id: str) -> str | None:
    """Put the request id on the current (request) span; its trace id (hex), or None when not recording."""
    current = trace.get_current_span()
    context = current.get_span_context()
    if not context.is_valid:
        return None
    current.set_attribute("vramwise.request_id", request_id)
    return format(context.trace_id, "032x")


def flush_spans(timeout_ms: int = 2000) -> None:
    """Export the spans this process still holds (a worker process about to end: it exits without running
    the exit handlers that would)."""
    flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if flush is not None:
        flush(timeout_ms)


def trace_carrier() -> dict[str, str]:
    """The current span's context as W3C `traceparent` headers (to hand to a worker process); empty when no
    span is recording."""
    if not trace.get_current_span().get_span_context().is_valid:
        return {}
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


@contextmanager
def continued(carrier: dict[str, str] | None) -> Iterator[None]:
    """Run the block as part of the trace `carrier` came from (`trace_carrier`); as is without one."""
    if not carrier:
        yield
        return
    token = otel_context.attach(propagate.extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)
