"""The LLM agent as an operator sees it, on a real `vramwise serve` talking to a fake OpenAI-compatible
endpoint (tests/fakes/openai_server.py): LLM calls by outcome, fallbacks by reason, grounding overrules,
characters sent and received; and its traces, exported over OTLP/HTTP to a fake collector on loopback
(tests/fakes/otlp_collector.py: real HTTP, protobuf bodies): the request's span, the agent's under it,
each LLM call's and each store call's under those."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.otlp_collector import FakeCollector, ReceivedSpan
from tests.test_crash_restart import serve
from tests.test_llm_http import ARGS, QUESTION, honest
from tests.test_observability import chat, samples, value

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (make install-test installs it)")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra")


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeOpenAI, FakeCollector]]:
    tmp = tmp_path_factory.mktemp("llm-observed")
    with FakeOpenAI() as fake, FakeCollector() as collector:
        env = {
            "VRAMWISE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp / 'store.sqlite3'}",
            "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": "test",
            "VRAMWISE_LLM_MODEL": "fake-model",
            "VRAMWISE_AGENT": "llm",
            "VRAMWISE_LLM_TIMEOUT_S": "20",
            "VRAMWISE_METRICS_TOKEN": "scrape-token-7",
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_SERVICE_NAME": "vramwise-test",
            "OTEL_BSP_SCHEDULE_DELAY": "100",  # ms: spans leave within the test's patience
        }
        with serve(env, tmp / "server.log") as (url, _proc):
            yield url, fake, collector


def test_llm_outcomes_fallbacks_and_overrules_are_counted(
    llm_server: tuple[str, FakeOpenAI, FakeCollector],
) -> None:
    url, fake, _ = llm_server
    before = samples(url)
    fake.script = [
        Reply(tool_calls=[("estimate_memory", ARGS)]),  # an honest answer: 2 calls
        honest,
        Reply(tool_calls=[("estimate_memory", ARGS)]),  # an invented figure: overruled, 2 calls
        Reply(content="It needs 19.99 GiB per GPU.\n"),
        Reply(status=500),  # the endpoint fails, and again when retried once: the offline agent answers
        Reply(status=500),
    ]
    fake.requests.clear()
    agents = []
    for _ in range(3):
        _, events = chat(url, QUESTION)  # no keys on this server
        assert events[-1][0] == "done", events[-1]
        agents.append(events[-1][1]["agent"])
    assert agents == ["llm", "llm->offline", "llm->offline"]
    assert len(fake.requests) == 6  # the 5xx is retried once (service/agent/llm/wire.py)
    after = samples(url)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("vramwise_llm_requests_total", outcome="ok") == 3
    assert moved("vramwise_llm_requests_total", outcome="stopped") == 1  # the overruled reply, cut off
    assert moved("vramwise_llm_requests_total", outcome="http_500") == 1
    assert moved("vramwise_grounding_overrules_total") == 1
    assert moved("vramwise_llm_fallbacks_total", reason="grounding") == 1
    assert moved("vramwise_llm_fallbacks_total", reason="http_500") == 1
    web = {"channel": "web", "task": "inference", "language": "en"}
    assert moved("vramwise_answers_total", agent="llm", **web) == 1
    assert moved("vramwise_answers_total", agent="llm->offline", **web) == 2
    # every request carried the system prompt and the question; replies came back as text and tool calls
    sent = moved("vramwise_llm_characters_total", direction="sent")
    assert sent > 5 * len(QUESTION)
    assert moved("vramwise_llm_characters_total", direction="received") > len("It needs 19.99 GiB per GPU.")


def _children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[ReceivedSpan]:
    return [s for s in spans if s.parent_span_id == parent.span_id and s.trace_id == parent.trace_id]


def test_spans_reach_an_otlp_collector(llm_server: tuple[str, FakeOpenAI, FakeCollector]) -> None:
    url, fake, collector = llm_server
    fake.script = [Reply(tool_calls=[("estimate_memory", ARGS)]), honest]
    _, events = chat(url, QUESTION, **{"X-Request-ID": "trace-me-1"})
    assert events[-1][1]["agent"] == "llm"

    def request_span(spans: list[ReceivedSpan]) -> ReceivedSpan | None:
        return next((s for s in spans if s.attributes.get("vramwise.request_id") == "trace-me-1"), None)

    def complete(spans: list[ReceivedSpan]) -> bool:
        root = request_span(spans)
        if root is None:
            return False
        agent = [s for s in spans if s.name == "agent" and s.trace_id == root.trace_id]
        return bool(agent) and len([s for s in spans if s.name == "llm" and s.trace_id == root.trace_id]) >= 2

    spans = collector.wait_for(complete)
    root = request_span(spans)
    assert root is not None, sorted({s.name for s in spans})
    assert root.parent_span_id == "" and root.service_name == "vramwise-test"
    assert root.attributes.get("http.route") == "/v1/chat"
    trace_spans = [s for s in spans if s.trace_id == root.trace_id]
    agent = next(s for s in trace_spans if s.name == "agent")
    assert agent.attributes["channel"] == "web"
    llm_calls = [s for s in trace_spans if s.name == "llm"]
    assert len(llm_calls) == 2 and all(s.parent_span_id == agent.span_id for s in llm_calls)
    assert llm_calls[0].attributes["gen_ai.request.model"] == "fake-model"
    stores = {s.attributes["db.operation"] for s in trace_spans if s.name == "store"}
    assert {"begin_turn", "finish_turn"} <= stores
    # every span of the request hangs off the request's span
    by_id = {s.span_id: s for s in trace_spans}
    for s in trace_spans:
        top = s
        while top.parent_span_id:
            top = by_id[top.parent_span_id]
        assert top.span_id == root.span_id, s.name
