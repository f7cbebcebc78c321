"""What an operator sees of a real `vramwise serve` (a subprocess on loopback, one offline-agent worker
process): `GET /metrics` counters that move with each kind of answer and refusal, histogram buckets that
fill, who may read `/metrics`, and JSON access lines that carry the response's `X-Request-ID`.
(The LLM agent's counters and the OTLP traces: tests/test_observability_llm.py.)"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.test_crash_restart import serve

KEY = "team-key-1"
SCRAPE_TOKEN = "scrape-token-7"
AUTH = {"Authorization": f"Bearer {KEY}"}
LORA_EN = "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?"
INFERENCE_ZH = "Qwen2.5-7B 在一张 4090 上推理需要多少显存?"
CONCEPT = "What is ZeRO-3?"
UNKNOWN_MODEL = "Can I fine-tune llama-5-9b with LoRA on one RTX 4090?"


def samples(url: str, headers: dict[str, str] | None = None) -> dict[tuple[str, frozenset], float]:
    """Every sample of `/metrics`: (name, labels) -> value."""
    r = httpx.get(f"{url}/metrics", headers=headers or {"Authorization": f"Bearer {SCRAPE_TOKEN}"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=")
    out: dict[tuple[str, frozenset], float] = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def chat(url: str, message: str, **headers: str) -> tuple[httpx.Response, list[tuple[str, dict]]]:
    """POST /v1/chat; the response and its SSE events (name, data)."""
    r = httpx.post(f"{url}/v1/chat", json={"message": message}, headers={**AUTH, **headers}, timeout=60)
    events: list[tuple[str, dict]] = []
    name = ""
    for line in r.text.splitlines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[6:])))
    return r, events


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("observed")
    log = tmp / "server.log"
    env = {
        "VRAMWISE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp / 'store.sqlite3'}",
        "VRAMWISE_AGENT": "offline",
        "VRAMWISE_AGENT_PROCESSES": "1",
        "VRAMWISE_API_KEYS": KEY,
        "VRAMWISE_METRICS_TOKEN": SCRAPE_TOKEN,
        "VRAMWISE_LOG_FORMAT": "json",
        "VRAMWISE_MAX_BODY_BYTES": "2048",
    }
    with serve(env, log) as (url, _proc):
        yield url, log


def test_metrics_needs_a_key_or_the_metrics_token(server: tuple[str, Path]) -> None:
    url, _ = server
    assert httpx.get(f"{url}/metrics").status_code == 401
    wrong = httpx.get(f"{url}/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert wrong.json()["error"] == "invalid metrics token"
    assert wrong.headers["WWW-Authenticate"] == "Bearer"
    by_token = samples(url)
    by_key = samples(url, AUTH)
    assert value(by_token, "vramwise_agent_worker_processes") == 1.0
    assert value(by_key, "vramwise_agent_worker_processes") == 1.0
    assert any(name == "process_cpu_seconds_total" for name, _ in by_token)  # the standard process metrics
    # the two 401s above are refusals with the API key's reason
    assert value(by_key, "vramwise_errors_total", reason="invalid_api_key") >= 2


def test_counters_move_with_each_kind_of_answer_and_refusal(server: tuple[str, Path]) -> None:
    url, _ = server
    before = samples(url)

    _, events = chat(url, LORA_EN)
    assert events[-1][0] == "done" and events[-1][1]["agent"] == "offline"
    _, events = chat(url, INFERENCE_ZH)
    assert events[-1][0] == "done" and events[-1][1]["language"] == "zh"
    _, events = chat(url, CONCEPT)
    assert events[-1][0] == "done" and events[-1][1]["scenario"] is None
    _, events = chat(url, UNKNOWN_MODEL)
    assert events[-1][0] == "error"
    openai = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "vramwise", "messages": [{"role": "user", "content": LORA_EN}]},
        headers=AUTH,
        timeout=60,
    )
    assert openai.status_code == 200
    question = httpx.post(f"{url}/v1/coach/questions", json={"language": "en"}, headers=AUTH).json()
    graded = httpx.post(
        f"{url}/v1/coach/answers",
        json={
            "session_id": question["session_id"],
            "question_id": question["question_id"],
            "answer": "12 GiB",
        },
        headers=AUTH,
    )
    assert graded.status_code == 200
    assert httpx.post(f"{url}/v1/chat", json={"message": "hi"}).status_code == 401
    too_large = httpx.post(f"{url}/v1/chat", json={"message": "x" * 4000}, headers=AUTH)
    assert too_large.status_code == 413
    assert httpx.post(f"{url}/v1/chat", json={"message": "  "}, headers=AUTH).status_code == 422
    bad_scenario = httpx.post(
        f"{url}/v1/estimate", json={"model": "llama-2-7b", "task": "juggling"}, headers=AUTH
    )
    assert bad_scenario.status_code == 422

    after = samples(url)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    answers = "vramwise_answers_total"
    assert moved(answers, channel="web", task="lora", language="en", agent="offline") == 1
    assert moved(answers, channel="web", task="inference", language="zh", agent="offline") == 1
    assert moved(answers, channel="web", task="concept", language="en", agent="offline") == 1
    assert moved(answers, channel="openai", task="lora", language="en", agent="offline") == 1
    # a graded answer is a quiz answer; one with nothing gradable for this question's quantity, a hint
    coach_task = "hint" if graded.json()["correct"] is None else "quiz"
    assert moved(answers, channel="coach", task=coach_task, language="en", agent="offline") == 1
    errors = "vramwise_errors_total"
    assert moved(errors, reason="unknown_model") == 1  # in the stream: the catalog does not know it
    assert moved(errors, reason="invalid_api_key") == 1
    assert moved(errors, reason="body_too_large") == 1
    assert moved(errors, reason="empty_message") == 1
    assert moved(errors, reason="invalid_request") == 1  # the estimate's task is not one of the tasks
    assert moved("vramwise_http_requests_total", method="POST", route="/v1/chat", status="413") == 1
    assert moved("vramwise_store_seconds_count", operation="begin_turn") == 5  # 4 web + 1 openai turns
    assert value(after, "vramwise_active_streams", channel="web") == 0


def test_label_values_stay_bounded_whatever_a_client_sends(server: tuple[str, Path]) -> None:
    url, _ = server
    before = samples(url)
    webdav = httpx.request("PROPFIND", f"{url}/v1/chat", headers=AUTH)
    assert webdav.status_code == 405
    assert httpx.get(f"{url}/no/such/path/{'x' * 40}", headers=AUTH).status_code == 404
    after = samples(url)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    http = "vramwise_http_requests_total"
    status = str(webdav.status_code)
    assert (
        moved(http, method="other", route="/v1/chat", status=status) == 1
    )  # the method is not a label value
    assert moved(http, method="GET", route="unmatched", status="404") == 1  # nor the unknown path
    assert moved("vramwise_errors_total", reason="not_found") == 1
    assert not any(
        labels for name, labels in after if "PROPFIND" in dict(labels).values() or "x" * 40 in str(labels)
    )


def test_histogram_buckets_fill(server: tuple[str, Path]) -> None:
    url, _ = server
    before = samples(url)
    for _ in range(3):
        chat(url, LORA_EN)
    after = samples(url)
    name = "vramwise_answer_first_event_seconds"
    count = value(after, f"{name}_count", channel="web") - value(before, f"{name}_count", channel="web")
    assert count == 3
    inf = value(after, f"{name}_bucket", channel="web", le="+Inf") - value(
        before, f"{name}_bucket", channel="web", le="+Inf"
    )
    assert inf == 3
    # the offline agent's first event comes within seconds on any box: a finite bucket holds all three
    ten = value(after, f"{name}_bucket", channel="web", le="10.0") - value(
        before, f"{name}_bucket", channel="web", le="10.0"
    )
    assert ten == 3
    answer_sum = value(after, "vramwise_answer_seconds_sum", channel="web") - value(
        before, "vramwise_answer_seconds_sum", channel="web"
    )
    first_sum = value(after, f"{name}_sum", channel="web") - value(before, f"{name}_sum", channel="web")
    assert answer_sum > first_sum > 0  # the answer ends after its first event


def _log_lines(log: Path) -> list[dict]:
    lines = []
    for raw in log.read_text(encoding="utf-8").splitlines():
        if raw.startswith("{"):
            lines.append(json.loads(raw))  # every line the service writes is one JSON object
        else:
            assert not raw.strip(), f"not a JSON line: {raw!r}"
    return lines


def test_json_access_lines_carry_the_request_id(server: tuple[str, Path]) -> None:
    url, log = server
    given, _ = chat(url, LORA_EN, **{"X-Request-ID": "lb-7f3a-0001"})
    assert given.headers["x-request-id"] == "lb-7f3a-0001"  # an incoming id is kept
    made, events = chat(url, INFERENCE_ZH)
    made_id = made.headers["x-request-id"]
    assert len(made_id) == 32 and made_id != "lb-7f3a-0001"
    conversation_id = events[0][1]["conversation_id"]
    refused = httpx.post(
        f"{url}/v1/chat", json={"message": "hi"}, headers={"X-Request-ID": "bad id with spaces"}
    )
    lines = _log_lines(log)
    by_id = {line.get("request_id"): line for line in lines if line.get("logger") == "vramwise.access"}
    first = by_id["lb-7f3a-0001"]
    assert first["route"] == "/v1/chat" and first["status"] == 200 and first["channel"] == "web"
    assert first["owner"] == hashlib.sha256(KEY.encode()).hexdigest()
    assert isinstance(first["duration_ms"], float) and first["duration_ms"] > 0
    second = by_id[made_id]
    assert second["conversation_id"] == conversation_id and second["agent"] == "offline"
    third = by_id[refused.headers["x-request-id"]]  # a malformed incoming id is replaced, not logged
    assert third["status"] == 401 and third["reason"] == "invalid_api_key" and third["owner"] is None
    text = log.read_text(encoding="utf-8")
    assert KEY not in text  # never the key
    assert (
        LORA_EN not in text and "Qwen2.5-7B" not in text
    )  # no question text unless VRAMWISE_LOG_QUESTIONS=1


def test_questions_are_logged_only_when_asked_and_metrics_can_be_turned_off(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    env = {
        "VRAMWISE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'store.sqlite3'}",
        "VRAMWISE_AGENT": "offline",
        "VRAMWISE_AGENT_PROCESSES": "0",
        "VRAMWISE_LOG_FORMAT": "json",
        "VRAMWISE_LOG_QUESTIONS": "1",
        "VRAMWISE_METRICS": "false",
    }
    with serve(env, log) as (url, _proc):
        assert httpx.get(f"{url}/metrics").status_code == 404
        r, _ = chat(url, LORA_EN)
    line = next(
        json.loads(raw)
        for raw in log.read_text(encoding="utf-8").splitlines()
        if raw.startswith("{") and r.headers["x-request-id"] in raw
    )
    assert line["question"] == LORA_EN and line["owner"] is None
