"""A span where the process already traces, and nothing where it does not (service/hub.py, the estimator
and planner in worker processes): OpenTelemetry is loaded in the service (FastAPI imports it; its worker
processes inherit it) and the service installs a tracer provider when OTEL_EXPORTER_OTLP_ENDPOINT is set
(service/observability/tracing.py). The command line never imports it (~80 ms of start-up)."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from typing import Any


def traced(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span named `name` when OpenTelemetry is loaded in this process, else a no-op context."""
    otel_trace = sys.modules.get("opentelemetry.trace")
    if otel_trace is None:
        return nullcontext()
    return otel_trace.get_tracer("vramwise").start_as_current_span(name, attributes=attributes or None)
