"""Opening the service to a team: API keys (Bearer, conversations private to their key), rate limits per key
or client address (429 + Retry-After; shared by replicas on PostgreSQL), a cap on concurrent streams per
client, and CORS off unless configured. Real uvicorn on loopback where connections matter."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import openai
import pytest
from fastapi.testclient import TestClient

from service.agent.base import ConversationState
from service.agent.events import AgentEvent, Answer, DoneEvent, Language, TokenEvent
from service.api.ratelimit import Rate, parse_rate
from service.app import create_app
from service.settings import Settings
from tests.pg_support import postgres_server
from tests.service_support import live_server, offline_settings, parse_sse, reset_sse_exit_flag

__all__ = ["postgres_server", "reset_sse_exit_flag"]  # fixtures

QUESTION = "Can I run Llama-2-7B inference on one RTX 4090?"
ALICE, BOB = "alice-key-0123456789", "bob-key-9876543210"


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _chat(client: TestClient, body: dict, key: str | None) -> tuple[int, list]:
    with client.stream("POST", "/v1/chat", json=body, headers=_auth(key) if key else {}) as resp:
        if resp.status_code != 200:
            resp.read()
            return resp.status_code, [resp.json()]
        return 200, parse_sse(resp.iter_lines())


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[TestClient]:
    settings = offline_settings(tmp_path / "keys.sqlite3", agent_processes=0, api_keys=f"{ALICE}, {BOB}")
    with TestClient(create_app(settings)) as c:
        yield c


# ---- API keys ----------------------------------------------------------------------------------------
def test_every_route_but_the_probes_needs_a_key(keyed: TestClient) -> None:
    for method, path in [
        ("POST", "/v1/chat"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/estimate"),
        ("GET", "/v1/models"),
        ("GET", "/v1/gpus"),
        ("GET", "/v1/conversations/abc"),
        ("GET", "/openapi.json"),
    ]:
        r = keyed.request(method, path, json={} if method == "POST" else None)
        assert r.status_code == 401, (path, r.text)
        assert r.headers["www-authenticate"] == "Bearer"
        r = keyed.request(method, path, headers=_auth("not-a-key"), json={} if method == "POST" else None)
        assert r.status_code == 401, (path, r.text)
    body = keyed.post("/v1/chat", json={"message": QUESTION}).json()
    assert body["error"] == "this service needs an API key" and body["field"] == "Authorization"
    openai_body = keyed.post("/v1/chat/completions", json={}).json()
    assert openai_body["error"]["code"] == "invalid_api_key"  # OpenAI's shape: SDKs raise AuthenticationError
    assert keyed.get("/healthz").status_code == 200
    assert keyed.get("/readyz").status_code == 200
    assert keyed.get("/").status_code == 200  # the page asks for a key itself (service/web/auth.js)
    assert keyed.post("/slack/events", json={}).status_code != 401  # Slack signs its own requests
    assert keyed.get("/v1/gpus", headers=_auth(BOB)).status_code == 200


def test_a_conversation_is_visible_only_to_its_key(keyed: TestClient) -> None:
    status, events = _chat(keyed, {"message": QUESTION}, ALICE)
    assert status == 200 and events[-1].event == "done"
    cid = events[0].data["conversation_id"]
    assert keyed.get(f"/v1/conversations/{cid}", headers=_auth(ALICE)).status_code == 200
    assert keyed.get(f"/v1/conversations/{cid}", headers=_auth(BOB)).status_code == 404
    assert keyed.delete(f"/v1/conversations/{cid}", headers=_auth(BOB)).status_code == 404
    status, _ = _chat(keyed, {"message": "What about an A100?", "conversation_id": cid}, BOB)
    assert status == 404
    # still Alice's, untouched by Bob
    turns = keyed.get(f"/v1/conversations/{cid}", headers=_auth(ALICE)).json()["turns"]
    assert [t["question"] for t in turns] == [QUESTION]
    status, events = _chat(keyed, {"message": "What about an A100 80GB?", "conversation_id": cid}, ALICE)
    assert status == 200 and events[-1].event == "done"
    assert keyed.delete(f"/v1/conversations/{cid}", headers=_auth(ALICE)).status_code == 204


def test_the_same_openai_user_under_two_keys_is_two_conversations(keyed: TestClient) -> None:
    def ask(key: str, text: str) -> str:
        body = {"model": "vramwise", "user": "team", "messages": [{"role": "user", "content": text}]}
        r = keyed.post("/v1/chat/completions", json=body, headers=_auth(key))
        assert r.status_code == 200, r.text
        return r.json()["conversation_id"]

    a = ask(ALICE, QUESTION)
    b = ask(BOB, "Llama-2-13B LoRA on an A100 80GB?")
    assert a != b and ask(ALICE, "and with 2 of them?") == a
    alice = keyed.get(f"/v1/conversations/{a}", headers=_auth(ALICE)).json()["turns"]
    assert [t["question"] for t in alice] == [QUESTION, "and with 2 of them?"]
    assert keyed.get(f"/v1/conversations/{a}", headers=_auth(BOB)).status_code == 404


def test_the_openai_sdk_sends_its_key(tmp_path: Path) -> None:
    settings = offline_settings(tmp_path / "sdk.sqlite3", agent_processes=0, api_keys=ALICE)
    with live_server(create_app(settings)) as url:
        good = openai.OpenAI(base_url=f"{url}/v1", api_key=ALICE)
        reply = good.chat.completions.create(
            model="vramwise", messages=[{"role": "user", "content": QUESTION}]
        )
        assert "GiB" in (reply.choices[0].message.content or "")
        with pytest.raises(openai.AuthenticationError, match="invalid API key"):
            openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0).models.list()


# ---- rate limits -------------------------------------------------------------------------------------
def test_rate_limit_syntax() -> None:
    assert parse_rate("60/minute") == Rate(60, 60)
    assert parse_rate("10 / second") == Rate(10, 1)
    assert parse_rate("1000/hours") == Rate(1000, 3600)
    assert parse_rate("5/10 minutes") == Rate(5, 600)
    for bad in ("60", "0/minute", "ten/minute", "5/fortnight"):
        with pytest.raises(ValueError, match="accepted: N/second"):
            parse_rate(bad)
    with pytest.raises(ValueError, match="rate limit"):
        Settings(rate_limit="lots")


def test_rate_limit_per_key_with_retry_after(tmp_path: Path) -> None:
    settings = offline_settings(
        tmp_path / "rl.sqlite3", agent_processes=0, api_keys=f"{ALICE},{BOB}", rate_limit="3/minute"
    )
    with TestClient(create_app(settings)) as c:
        codes = [c.get("/v1/gpus", headers=_auth(ALICE)).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        r = c.get("/v1/gpus", headers=_auth(ALICE))
        assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 60
        assert r.json()["error"].startswith("rate limit exceeded: 3 requests per minute")
        assert c.get("/v1/gpus", headers=_auth(BOB)).status_code == 200  # Bob has his own budget
        assert c.get("/healthz").status_code == 200  # probes are never limited
        r = c.post("/v1/chat/completions", json={}, headers=_auth(ALICE))
        assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limit_exceeded"


def test_rate_limit_per_client_address_without_keys(tmp_path: Path) -> None:
    settings = offline_settings(tmp_path / "ip.sqlite3", agent_processes=0, rate_limit="2/minute")
    with live_server(create_app(settings)) as url:
        codes = [httpx.get(f"{url}/v1/models", timeout=10).status_code for _ in range(3)]
    assert codes == [200, 200, 429]


def test_rate_limit_is_shared_by_replicas_on_postgres(postgres_server) -> None:  # type: ignore[no-untyped-def]
    url = postgres_server.new_database()

    def replica() -> Settings:
        return Settings(
            database_url=url,
            agent="offline",
            openai_api_key=None,
            openai_base_url=None,
            agent_processes=0,
            rate_limit="5/minute",
            api_keys=ALICE,
        )

    with TestClient(create_app(replica())) as a, TestClient(create_app(replica())) as b:
        codes = [(a if i % 2 else b).get("/v1/gpus", headers=_auth(ALICE)).status_code for i in range(7)]
    assert codes == [200] * 5 + [429] * 2


# ---- concurrent streams --------------------------------------------------------------------------------
class GatedAgent:
    name = "gated"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()

    async def stream(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> AsyncIterator[AgentEvent]:
        yield TokenEvent(text="Working it out")
        self.started.set()
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        yield DoneEvent(answer=Answer(question=question, language="en", answer="done", agent=self.name))


def test_concurrent_streams_per_client_are_capped(tmp_path: Path) -> None:
    agent = GatedAgent()
    settings = offline_settings(tmp_path / "cap.sqlite3", max_streams_per_client=1)
    with (
        live_server(create_app(settings, agent=agent)) as url,
        httpx.Client(base_url=url, timeout=10) as client,
    ):
        with client.stream("POST", "/v1/chat", json={"message": QUESTION}) as first:
            assert first.status_code == 200
            assert agent.started.wait(10)
            second = client.post("/v1/chat", json={"message": QUESTION})
            assert second.status_code == 429, second.text
            assert second.headers["retry-after"] == "1" and second.json()["field"] is None
            assert client.get("/v1/gpus").status_code == 200  # other routes are not streams
            agent.release.set()
            list(first.iter_lines())
        again = client.post("/v1/chat", json={"message": QUESTION})
        assert again.status_code == 200


def test_cors_stays_off_unless_configured(tmp_path: Path) -> None:
    preflight = {"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST"}
    with TestClient(create_app(offline_settings(tmp_path / "c.sqlite3", agent_processes=0))) as c:
        r = c.options("/v1/chat", headers=preflight)
        assert "access-control-allow-origin" not in r.headers
    settings = offline_settings(
        tmp_path / "c2.sqlite3", agent_processes=0, cors_origins=["https://ok.example"]
    )
    with TestClient(create_app(settings)) as c:
        r = c.options("/v1/chat", headers={**preflight, "Origin": "https://ok.example"})
        assert r.headers["access-control-allow-origin"] == "https://ok.example"
