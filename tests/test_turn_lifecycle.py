"""Nothing a user sends is lost: the question is stored before the agent runs (status in_progress), the
turn is finished when the answer is done, a turn cut off (client gone, stream torn down) is shown as
interrupted and can be asked again, and a conversation deleted while a stream is still answering stays
deleted. The same for the OpenAI-compatible route. Real uvicorn on loopback, real httpx disconnects."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from service.agent.base import ConversationState
from service.agent.events import AgentEvent, Answer, DoneEvent, Language, TokenEvent
from service.app import create_app
from tests.pg_support import postgres_server
from tests.service_support import live_server, offline_settings, parse_sse, reset_sse_exit_flag

__all__ = ["postgres_server", "reset_sse_exit_flag"]  # fixtures

QUESTION = "Can I run Llama-2-7B inference on one RTX 4090?"
MISSING_MODEL = "How much memory does inference need on a 4090?"  # no model: the agent says what it needs


class GatedAgent:
    """Streams one token, then waits until the test releases it; records the state it was given."""

    name = "gated"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.states: list[ConversationState] = []

    async def stream(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> AsyncIterator[AgentEvent]:
        self.states.append(state.model_copy(deep=True))
        yield TokenEvent(text="Working it out")
        self.started.set()
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        yield DoneEvent(
            answer=Answer(question=question, language="en", answer=f"answer to: {question}", agent=self.name)
        )


@pytest.fixture
def gated() -> GatedAgent:
    return GatedAgent()


@pytest.fixture
def server(tmp_path: Path, gated: GatedAgent) -> Iterator[str]:
    app = create_app(offline_settings(tmp_path / "turns.sqlite3"), agent=gated)
    with live_server(app) as url:
        yield url
    gated.release.set()


def _wait_for(predicate, timeout: float = 10.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def _cut_off_after_first_token(url: str, path: str, body: dict) -> str:
    """POST a streaming request, read until the first token, then drop the connection; the id it gave."""
    cid = None
    with httpx.Client(base_url=url, timeout=10) as client, client.stream("POST", path, json=body) as resp:
        assert resp.status_code == 200, resp.read()
        for line in resp.iter_lines():
            if '"conversation_id"' in line and cid is None:
                cid = line.split('"conversation_id": "')[1].split('"')[0]
            if "Working it out" in line:
                break
    assert cid is not None
    return cid


def _turns(url: str, cid: str) -> list[dict] | None:
    r = httpx.get(f"{url}/v1/conversations/{cid}", timeout=10)
    return r.json()["turns"] if r.status_code == 200 else None


def test_question_is_stored_before_the_answer_and_a_cut_off_turn_shows_interrupted(
    server: str, gated: GatedAgent
) -> None:
    cid = _cut_off_after_first_token(server, "/v1/chat", {"message": QUESTION})
    turns = _wait_for(lambda: (t := _turns(server, cid)) and t[0]["status"] == "interrupted" and t)
    assert turns, _turns(server, cid)
    assert [(t["question"], t["status"]) for t in turns] == [(QUESTION, "interrupted")]

    # a new question on that existing conversation, cut off too: both questions are there
    gated.started.clear()
    follow = "What about an A100 80GB?"
    again = _cut_off_after_first_token(server, "/v1/chat", {"message": follow, "conversation_id": cid})
    assert again == cid
    turns = _wait_for(
        lambda: (t := _turns(server, cid)) and len(t) == 2 and t[1]["status"] == "interrupted" and t
    )
    assert [(t["question"], t["status"]) for t in turns] == [
        (QUESTION, "interrupted"),
        (follow, "interrupted"),
    ]

    # asked again, it is answered; the interrupted turns are not the agent's history (no answer to build on)
    gated.release.set()
    with httpx.Client(base_url=server, timeout=10) as client:
        r = client.post("/v1/chat", json={"message": QUESTION, "conversation_id": cid})
        events = parse_sse(r.iter_lines())
    assert events[-1].event == "done", events[-1]
    assert gated.states[-1].turns == []
    turns = _turns(server, cid)
    assert turns is not None
    assert [t["status"] for t in turns] == ["interrupted", "interrupted", "done"]
    assert turns[2]["answer"] == f"answer to: {QUESTION}"


def test_question_is_in_the_store_while_the_answer_is_still_streaming(server: str, gated: GatedAgent) -> None:
    with (
        httpx.Client(base_url=server, timeout=10) as client,
        client.stream("POST", "/v1/chat", json={"message": QUESTION}) as resp,
    ):
        lines = resp.iter_lines()
        first = next(line for line in lines if line.startswith("data:"))
        cid = first.split('"conversation_id": "')[1].split('"')[0]
        assert gated.started.wait(10)
        turns = _turns(server, cid)
        assert turns is not None and [(t["question"], t["status"]) for t in turns] == [
            (QUESTION, "in_progress")
        ]
        gated.release.set()
        rest = list(lines)
    assert any("event: done" in line for line in rest)
    turns = _turns(server, cid)
    assert turns is not None and [(t["status"], t["answer"]) for t in turns] == [
        ("done", f"answer to: {QUESTION}")
    ]


def test_openai_route_keeps_a_cut_off_question(server: str) -> None:
    body = {
        "model": "vramwise",
        "stream": True,
        "user": "alice",
        "messages": [{"role": "user", "content": QUESTION}],
    }
    cid = _cut_off_after_first_token(server, "/v1/chat/completions", body)
    assert cid == "alice"
    turns = _wait_for(lambda: (t := _turns(server, cid)) and t[0]["status"] == "interrupted" and t)
    assert turns and [(t["question"], t["status"]) for t in turns] == [(QUESTION, "interrupted")]


def test_deleting_during_a_stream_stays_deleted(server: str, gated: GatedAgent) -> None:
    with (
        httpx.Client(base_url=server, timeout=10) as client,
        client.stream("POST", "/v1/chat", json={"message": QUESTION}) as resp,
    ):
        lines = resp.iter_lines()
        first = next(line for line in lines if line.startswith("data:"))
        cid = first.split('"conversation_id": "')[1].split('"')[0]
        assert gated.started.wait(10)
        assert httpx.delete(f"{server}/v1/conversations/{cid}", timeout=10).status_code == 204
        gated.release.set()
        rest = list(lines)
    assert any("event: done" in line for line in rest)  # the user still gets the answer being written
    r = httpx.get(f"{server}/v1/conversations/{cid}", timeout=10)
    assert r.status_code == 404, r.text
    # and a follow-up on it is refused, not silently answered into a resurrected conversation
    r = httpx.post(
        f"{server}/v1/chat", json={"message": "and on an A100?", "conversation_id": cid}, timeout=10
    )
    assert r.status_code == 404


def test_an_agent_error_keeps_the_question_with_the_reason(tmp_path: Path) -> None:
    with TestClient(create_app(offline_settings(tmp_path / "e.sqlite3", agent_processes=0))) as client:
        with client.stream("POST", "/v1/chat", json={"message": MISSING_MODEL}) as resp:
            events = parse_sse(resp.iter_lines())
        assert events[-1].event == "error"
        cid = events[0].data["conversation_id"]
        turns = client.get(f"/v1/conversations/{cid}").json()["turns"]
    assert [(t["question"], t["status"]) for t in turns] == [(MISSING_MODEL, "error")]
    assert turns[0]["answer"] == events[-1].data["error"]


async def test_a_turn_left_in_progress_by_a_dead_process_is_interrupted_after_restart(tmp_path: Path) -> None:
    from service.store import ConversationStore

    url = f"sqlite+aiosqlite:///{tmp_path / 'dead.sqlite3'}"
    store = ConversationStore(url)
    await store.open()
    await store.begin_turn("c1", "the question", "en")
    await store.close()  # as if the process died: the turn was never finished
    store = ConversationStore(url)
    await store.open()
    try:
        stored = await store.get("c1")
        assert stored is not None
        assert [(t.question, t.status) for t in stored.turns] == [("the question", "interrupted")]
        assert (await store.load_state("c1")).turns == []  # type: ignore[union-attr]
    finally:
        await store.close()


async def test_a_database_from_before_turn_status_gains_the_column(tmp_path: Path) -> None:
    """An existing store (tables without `status`/`owner`) is migrated on open and keeps its turns."""
    import sqlite3

    from service.store import ConversationStore

    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE conversations (id VARCHAR(200) PRIMARY KEY, language VARCHAR(8), scenario_json TEXT,
            created_at DATETIME, updated_at DATETIME);
        CREATE TABLE turns (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id VARCHAR(200)
            REFERENCES conversations(id) ON DELETE CASCADE, question TEXT, answer TEXT, language VARCHAR(8),
            agent VARCHAR(40), scenario_json TEXT, created_at DATETIME);
        INSERT INTO conversations VALUES ('old', 'en', NULL, '2026-01-01 00:00:00', '2026-01-01 00:00:00');
        INSERT INTO turns VALUES (1, 'old', 'q', 'a', 'en', 'offline', NULL, '2026-01-01 00:00:00');
        """
    )
    conn.close()
    store = ConversationStore(f"sqlite+aiosqlite:///{path}")
    await store.open()
    try:
        stored = await store.get("old")
        assert stored is not None and [(t.question, t.answer, t.status) for t in stored.turns] == [
            ("q", "a", "done")
        ]
        state = await store.load_state("old")
        assert state is not None and [t.content for t in state.turns] == ["q", "a"]
    finally:
        await store.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'store.sqlite3'}"
    return request.getfixturevalue("postgres_server").new_database()


async def test_store_turn_lifecycle_on_both_databases(store_url: str) -> None:
    """begin -> finish (done / error / interrupted), only answered turns are history, a finish after a
    delete brings nothing back, and an interrupted mark never overwrites a finished turn."""
    from service.store import ConversationStore
    from tools.scenario import Scenario

    store = ConversationStore(store_url)
    await store.open()
    try:
        on_4090 = Scenario(model="llama-2-7b", task="inference", gpu="4090")
        t1 = await store.begin_turn("c1", "q1", "en", owner="alice")
        t2 = await store.begin_turn("c1", "q2", "zh", owner="alice")
        stored = await store.get("c1")
        assert stored is not None and [t.status for t in stored.turns] == ["in_progress", "in_progress"]
        await store.finish_turn(
            t1, "c1", answer="a1", status="done", language="en", agent="offline", scenario=on_4090
        )
        await store.finish_turn(t2, "c1", answer="no model given", status="error", agent="offline")
        store.finish_turn_soon(t1, "c1", "interrupted")  # late: must not undo the answer
        t3 = await store.begin_turn("c1", "q3", "en", owner="alice")
        store.finish_turn_soon(t3, "c1", "interrupted")
        await store.finish_turn(await store.begin_turn("c9", "x", "en"), "c9", answer="y", status="done")
        stored = await store.get("c1", "alice")
        assert stored is not None
        assert [(t.question, t.answer, t.status) for t in stored.turns] == [
            ("q1", "a1", "done"),
            ("q2", "no model given", "error"),
            ("q3", "", "interrupted"),
        ]
        assert stored.scenario == on_4090
        assert await store.get("c1", "bob") is None and await store.load_state("c1", "bob") is None
        state = await store.load_state("c1", "alice")
        assert state is not None and [t.content for t in state.turns] == ["q1", "a1"]

        t4 = await store.begin_turn("c2", "q", "en")
        assert await store.delete("c2")
        await store.finish_turn(t4, "c2", answer="late answer", status="done", scenario=on_4090)
        assert await store.get("c2") is None and await store.load_state("c2") is None
    finally:
        await store.close()


async def test_old_postgres_schema_gains_the_new_columns(postgres_server) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from service.store import ConversationStore

    url = postgres_server.new_database()
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "CREATE TABLE conversations (id VARCHAR(200) PRIMARY KEY, language VARCHAR(8), scenario_json TEXT,"
                " created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ)"
            )
        )
        await conn.execute(
            text(
                "CREATE TABLE turns (id SERIAL PRIMARY KEY, conversation_id VARCHAR(200) REFERENCES"
                " conversations(id) ON DELETE CASCADE, question TEXT, answer TEXT, language VARCHAR(8),"
                " agent VARCHAR(40), scenario_json TEXT, created_at TIMESTAMPTZ)"
            )
        )
        await conn.execute(text("INSERT INTO conversations VALUES ('old', 'en', NULL, now(), now())"))
        await conn.execute(
            text(
                "INSERT INTO turns (conversation_id, question, answer, language, agent, created_at)"
                " VALUES ('old', 'q', 'a', 'en', 'offline', now())"
            )
        )
    await engine.dispose()
    store = ConversationStore(url)
    await store.open()
    try:
        stored = await store.get("old")
        assert stored is not None and [(t.question, t.status) for t in stored.turns] == [("q", "done")]
        await store.begin_turn("old", "q2", "en")
        assert [t.status for t in (await store.get("old")).turns] == ["done", "in_progress"]  # type: ignore[union-attr]
    finally:
        await store.close()
