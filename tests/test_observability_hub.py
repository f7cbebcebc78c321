"""Hub look-ups and the estimator's work as an operator sees them, on a real `vramwise serve` (its offline
agent in one worker process) with a fake Hugging Face Hub (tests/fakes/hub_server.py, HF_ENDPOINT) and a
fake OTLP collector (tests/fakes/otlp_collector.py): `vramwise_hub_lookups_total` by outcome, and traces
that run from the request's span through the agent's (serving process) to the worker's, with the
estimator and the planner under it, and a Hub look-up's span under the request that made it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.hub_server import fake_hub
from tests.fakes.otlp_collector import FakeCollector, ReceivedSpan
from tests.test_crash_restart import serve
from tests.test_hub import REPOS
from tests.test_observability import LORA_EN, chat, samples, value

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (make install-test installs it)")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra")

FROM_HUB = {"model": "acme/qwen-mini-sft", "task": "inference", "gpu": "4090"}  # not in the catalog
GATED = {"model": "acme/nemo-gated", "task": "inference", "gpu": "4090"}


@pytest.fixture(scope="module")
def traced_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeCollector]]:
    tmp = tmp_path_factory.mktemp("hub-observed")
    with fake_hub({repo: make() for repo, make in REPOS.items()}) as hub, FakeCollector() as collector:
        env = {
            "VRAMWISE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp / 'store.sqlite3'}",
            "VRAMWISE_AGENT": "offline",
            "VRAMWISE_AGENT_PROCESSES": "1",
            "HF_ENDPOINT": hub.url,
            "HF_HOME": str(tmp / "hf"),
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        with serve(env, tmp / "server.log") as (url, _proc):
            yield url, collector


def _trace_of(collector: FakeCollector, request_id: str, names: set[str]) -> dict[str, ReceivedSpan]:
    """The spans of the request's trace, by name, once `names` have all arrived."""

    def root(spans: list[ReceivedSpan]) -> ReceivedSpan | None:
        return next((s for s in spans if s.attributes.get("vramwise.request_id") == request_id), None)

    def complete(spans: list[ReceivedSpan]) -> bool:
        r = root(spans)
        return r is not None and names <= {s.name for s in spans if s.trace_id == r.trace_id}

    spans = collector.wait_for(complete)
    found = root(spans)
    assert found is not None, sorted({s.name for s in spans})
    mine = {s.name: s for s in spans if s.trace_id == found.trace_id and s is not found}
    assert names <= set(mine), sorted(mine)
    by_id = {s.span_id: s for s in spans if s.trace_id == found.trace_id}
    for s in by_id.values():  # every span of the trace hangs off the request's span
        top = s
        while top.parent_span_id:
            top = by_id[top.parent_span_id]
        assert top.span_id == found.span_id, s.name
    return {"request": found, **mine}


def test_hub_lookups_are_counted_by_outcome(traced_server: tuple[str, FakeCollector]) -> None:
    url, _ = traced_server
    before = samples(url, {})
    fetched = httpx.post(f"{url}/v1/estimate", json=FROM_HUB, timeout=60)
    assert fetched.status_code == 200
    assert fetched.json()["assumptions"][0]["code"] == "model.hub"
    gated = httpx.post(f"{url}/v1/estimate", json=GATED, timeout=60)
    assert gated.status_code == 422 and "gated" in gated.json()["error"]
    after = samples(url, {})

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("vramwise_hub_lookups_total", outcome="fetched") == 1
    assert moved("vramwise_hub_lookups_total", outcome="hub_gated") == 1
    assert moved("vramwise_errors_total", reason="hub_gated") == 1


def test_a_hub_lookup_is_a_span_of_its_request(traced_server: tuple[str, FakeCollector]) -> None:
    url, collector = traced_server
    response = httpx.post(
        f"{url}/v1/estimate", json={**FROM_HUB, "gpu": "a100-80gb"}, headers={"X-Request-ID": "hub-1"}
    )
    assert response.status_code == 200
    spans = _trace_of(collector, "hub-1", {"hub", "estimator", "planner"})
    # the three are siblings (under FastAPI's span of the route's function, in the request's trace)
    assert spans["hub"].parent_span_id == spans["estimator"].parent_span_id == spans["planner"].parent_span_id
    assert spans["hub"].attributes["hub.repo"] == "acme/qwen-mini-sft"


def test_the_workers_spans_join_the_requests_trace(traced_server: tuple[str, FakeCollector]) -> None:
    url, collector = traced_server
    _, events = chat(url, LORA_EN, **{"X-Request-ID": "worker-1"})
    assert events[-1][0] == "done"
    spans = _trace_of(collector, "worker-1", {"agent", "offline agent", "estimator", "planner"})
    agent, worker = spans["agent"], spans["offline agent"]
    assert worker.parent_span_id == agent.span_id  # made in the worker process, joined by its context
    assert spans["estimator"].parent_span_id == worker.span_id
    assert spans["planner"].parent_span_id == worker.span_id
