"""The service's Prometheus metrics: one `ServiceMetrics` per app, in its own registry (no module-level
collectors: two apps in one process, as in the tests, never share counts).

Everything is counted in the serving process. The offline agent answers in worker processes
(service/api/agent_pool.py), but every event of every answer comes back through the serving process
(the turn runner relays it to the channel), so that is where answers, refusals, fallbacks and Hub
look-ups are counted: no prometheus-client multiprocess mode (`PROMETHEUS_MULTIPROC_DIR`) is needed.
The process metrics (`process_*`) are the serving process's; the worker pool's size is its own gauge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

# seconds: a first event arrives in milliseconds offline and in seconds from an LLM; a whole answer up to
# the LLM deadline (VRAMWISE_LLM_TIMEOUT_S, 60 s by default)
FIRST_EVENT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
ANSWER_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

EXPOSITION_CONTENT_TYPE = CONTENT_TYPE_LATEST


class ServiceMetrics:
    """The counters, histograms and gauges an operator reads at `GET /metrics` (docs/reference.md)."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        self.answers = Counter(
            "vramwise_answers",
            "Answers given, by channel, the scenario's task, the answer's language and the agent that answered",
            ["channel", "task", "language", "agent"],
            registry=registry,
        )
        self.first_event_seconds = Histogram(
            "vramwise_answer_first_event_seconds",
            "From the request's arrival to the agent's first event of an answer",
            ["channel"],
            buckets=FIRST_EVENT_BUCKETS,
            registry=registry,
        )
        self.answer_seconds = Histogram(
            "vramwise_answer_seconds",
            "From the request's arrival to the answer's end (done)",
            ["channel"],
            buckets=ANSWER_BUCKETS,
            registry=registry,
        )
        self.errors = Counter(
            "vramwise_errors",
            "Refused requests and answers that ended in an error, by reason",
            ["reason"],
            registry=registry,
        )
        self.llm_requests = Counter(
            "vramwise_llm_requests",
            "Calls to the LLM endpoint, by outcome (ok, timeout, connection, http_<status>, other)",
            ["outcome"],
            registry=registry,
        )
        self.llm_fallbacks = Counter(
            "vramwise_llm_fallbacks",
            "Answers the offline agent finished for the LLM agent (agent llm->offline), by reason",
            ["reason"],
            registry=registry,
        )
        self.grounding_overrules = Counter(
            "vramwise_grounding_overrules",
            "LLM answers stopped because a figure was not the estimator's",
            registry=registry,
        )
        self.llm_characters = Counter(
            "vramwise_llm_characters",
            "Characters sent to the LLM endpoint (prompts) and received from it (text and tool calls)",
            ["direction"],
            registry=registry,
        )
        self.llm_tokens = Counter(
            "vramwise_llm_tokens",
            "Tokens the LLM endpoint reported using (endpoints that report usage)",
            ["direction"],
            registry=registry,
        )
        self.hub_lookups = Counter(
            "vramwise_hub_lookups",
            "Hugging Face Hub look-ups of models the catalog lacks, by outcome "
            "(fetched, cache, hub_not_found, hub_gated, hub_unreachable, hub_timeout, hub_no_config)",
            ["outcome"],
            registry=registry,
        )
        self.store_seconds = Histogram(
            "vramwise_store_seconds",
            "Conversation store operations of a chat turn, by operation",
            ["operation"],
            buckets=STORE_BUCKETS,
            registry=registry,
        )
        self.active_streams = Gauge(
            "vramwise_active_streams",
            "Answers being streamed now, by channel",
            ["channel"],
            registry=registry,
        )
        self.agent_workers = Gauge(
            "vramwise_agent_worker_processes",
            "Offline-agent worker processes serving (0: the agent answers on a thread)",
            registry=registry,
        )
        self.http_requests = Counter(
            "vramwise_http_requests",
            "HTTP requests, by method, route template and status",
            ["method", "route", "status"],
            registry=registry,
        )
        self.http_seconds = Histogram(
            "vramwise_http_request_duration_seconds",
            "HTTP requests from arrival to the response's last byte (a stream: its whole length)",
            ["method", "route"],
            buckets=HTTP_BUCKETS,
            registry=registry,
        )

    def child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, kept: the hot path (every chat stream) looks it up in a dict instead of
        prometheus-client's validation and lock on each call."""
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def watch_workers(self, count: Callable[[], int]) -> None:
        """The worker gauge reads `count()` at each scrape."""
        self.agent_workers.set_function(count)

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
