"""Two replicas of the service on one real PostgreSQL: any SQLAlchemy URL (PostgreSQL) through
DATABASE_URL serves several replicas behind a load balancer.

Each replica is `create_app(Settings(database_url=<postgresql+asyncpg URL>))` served by a real uvicorn on
its own 127.0.0.1 port; a round-robin in the test plays the load balancer. The database is a throwaway
cluster from tests/pg_support.py (skips, naming the package, when PostgreSQL is not installed).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn
from sqlalchemy import text
from sse_starlette.sse import AppStatus

from service.agent.events import Answer
from service.app import create_app
from service.settings import Settings
from service.store import ConversationStore
from tests.pg_support import PostgresServer, postgres_server
from tests.service_support import SSEEvent, free_port, parse_sse, reset_sse_exit_flag
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import fmt_gib

__all__ = ["postgres_server", "reset_sse_exit_flag"]  # fixtures

TIMEOUT = httpx.Timeout(60.0)


def replica_settings(database_url: str) -> Settings:
    """Offline agent on a background thread (no worker processes: two replicas share this process)."""
    return Settings(
        database_url=database_url,
        agent="offline",
        openai_api_key=None,
        openai_base_url=None,
        agent_processes=0,
    )


@contextlib.contextmanager
def replicas(database_url: str, count: int = 2) -> Iterator[list[str]]:
    """`count` apps on the same database, each on a real uvicorn, all STARTED AT ONCE (their lifespans,
    which create the schema, run concurrently); yields their base URLs."""
    servers: list[tuple[uvicorn.Server, threading.Thread, int]] = []
    for _ in range(count):
        port = free_port()
        app = create_app(replica_settings(database_url))
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        servers.append(
            (server, threading.Thread(target=server.run, name=f"replica-{port}", daemon=True), port)
        )
    for _, thread, _ in servers:
        thread.start()
    try:
        deadline = time.monotonic() + 30
        for server, thread, port in servers:
            while not server.started:
                if not thread.is_alive():
                    raise RuntimeError(f"replica on port {port} failed to start (see its log above)")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"replica on port {port} did not start in 30 s")
                time.sleep(0.02)
        yield [f"http://127.0.0.1:{port}" for _, _, port in servers]
    finally:
        for server, _, _ in servers:
            server.should_exit = True
        for _, thread, _ in servers:
            thread.join(timeout=15)
        AppStatus.should_exit = False


class RoundRobin:
    """The load balancer: each request goes to the next replica."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self._next = itertools.cycle(urls)

    def pick(self) -> str:
        return next(self._next)


@dataclass
class Cluster:
    server: PostgresServer
    database_url: str
    urls: list[str]


@pytest.fixture(scope="module")
def cluster(postgres_server: PostgresServer) -> Iterator[Cluster]:
    url = postgres_server.new_database()
    with replicas(url, 2) as urls:
        yield Cluster(postgres_server, url, urls)


def chat(base_url: str, body: dict[str, Any]) -> list[SSEEvent]:
    with httpx.stream("POST", f"{base_url}/v1/chat", json=body, timeout=TIMEOUT) as resp:
        assert resp.status_code == 200, resp.read()
        return parse_sse(resp.iter_lines())


def one(events: list[SSEEvent], name: str) -> Any:
    found = [e.data for e in events if e.event == name]
    assert len(found) == 1, [e.event for e in events]
    return found[0]


def answered(events: list[SSEEvent]) -> Answer:
    names = [e.event for e in events]
    assert names[0] == "meta" and names[-1] == "done", names
    assert "error" not in names and "notice" not in names, events  # notice: the turn was not stored
    return Answer.model_validate(one(events, "done"))


def stored(base_url: str, conversation_id: str) -> dict[str, Any]:
    resp = httpx.get(f"{base_url}/v1/conversations/{conversation_id}", timeout=TIMEOUT)
    assert resp.status_code == 200, resp.text
    return resp.json()


def assert_estimate_of(events: list[SSEEvent], merged: dict[str, Any]) -> None:
    """The streamed estimate and answer are the estimator's figures for exactly the `merged` scenario."""
    answer = answered(events)
    assert answer.scenario is not None and answer.scenario.stated() == merged
    assert Scenario.model_validate(one(events, "scenario")).stated() == merged
    expected = estimate(Scenario.model_validate(merged))
    streamed = one(events, "estimate")
    assert streamed["per_gpu"]["total_bytes"] == expected.per_gpu.total_bytes
    assert {c["name"]: c["bytes"] for c in streamed["components"]} == {
        c.name: c.bytes for c in expected.components
    }
    assert fmt_gib(expected.per_gpu.total_bytes) in answer.answer


# ---- schema creation --------------------------------------------------------------------------------
def test_replicas_started_together_create_the_schema_once(postgres_server: PostgresServer) -> None:
    """Three replicas start at once on an empty database (before the fix, all but one died on
    'duplicate key value violates unique constraint' from the racing CREATE TABLEs); starting again
    on the existing schema is a no-op and keeps what was stored."""
    url = postgres_server.new_database()
    with replicas(url, 3) as urls:
        for base in urls:
            assert httpx.get(f"{base}/readyz", timeout=TIMEOUT).json() == {"status": "ready", "store": "ok"}
        first = answered(chat(urls[0], {"message": "Can I run Llama-2-7B inference on one RTX 4090?"}))
    with replicas(url, 2) as urls:
        kept = stored(urls[1], first.conversation_id or "")
        assert [t["question"] for t in kept["turns"]] == ["Can I run Llama-2-7B inference on one RTX 4090?"]


def test_concurrent_store_opens_on_an_empty_database(postgres_server: PostgresServer) -> None:
    """Eight stores opening at once in one event loop: the tightest create_all race there is."""
    url = postgres_server.new_database()

    async def run() -> int:
        stores = [ConversationStore(url) for _ in range(8)]
        results = await asyncio.gather(*(s.open() for s in stores), return_exceptions=True)
        try:
            assert [r for r in results if r is not None] == []
            async with stores[0]._connect() as conn:
                return int(
                    await conn.scalar(
                        text(
                            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' "
                            "AND tablename IN ('conversations', 'turns')"
                        )
                    )
                )
        finally:
            for s, r in zip(stores, results, strict=True):
                if r is None:
                    await s.close()

    assert asyncio.run(run()) == 2


# ---- follow-ups across replicas ---------------------------------------------------------------------
def test_english_follow_up_on_the_other_replica_uses_the_stored_scenario(cluster: Cluster) -> None:
    lb = RoundRobin(cluster.urls)
    first_replica = lb.pick()
    first_events = chat(
        first_replica, {"message": "Full fine-tune Llama-3-8B on one A100 80GB, batch 2, 4k context"}
    )
    first = answered(first_events)
    base = {
        "model": "llama-3-8b",
        "task": "full_finetune",
        "gpu": "a100-80gb",
        "num_gpus": 1,
        "batch_size": 2,
        "seq_len": 4096,
    }
    assert_estimate_of(first_events, base)

    second_replica = lb.pick()
    assert second_replica != first_replica
    follow_events = chat(
        second_replica, {"message": "what about with LoRA?", "conversation_id": first.conversation_id}
    )
    follow = answered(follow_events)
    assert follow.conversation_id == first.conversation_id
    assert "Follow-up of the previous question" in follow.answer
    assert_estimate_of(follow_events, {**base, "task": "lora"})
    assert follow.estimate is not None and first.estimate is not None
    assert follow.estimate.per_gpu.total_bytes < first.estimate.per_gpu.total_bytes

    # both turns are stored, in order, with timezone-aware UTC timestamps, seen the same from either replica
    views = [stored(u, first.conversation_id or "") for u in cluster.urls]
    assert views[0] == views[1]
    turns = views[0]["turns"]
    assert [t["question"] for t in turns] == [
        "Full fine-tune Llama-3-8B on one A100 80GB, batch 2, 4k context",
        "what about with LoRA?",
    ]
    assert all(t["created_at"].endswith(("+00:00", "Z")) for t in turns)
    assert Scenario.model_validate(views[0]["scenario"]).stated() == {**base, "task": "lora"}


def test_chinese_follow_up_on_the_other_replica_uses_the_stored_scenario(cluster: Cluster) -> None:
    lb = RoundRobin(cluster.urls[::-1])  # this time B first, then A
    first_events = chat(lb.pick(), {"message": "单卡4090 QLoRA 微调 Qwen2.5-14B，batch 2，序列长度 2048"})
    first = answered(first_events)
    assert first.language == "zh" and first.scenario is not None
    base = first.scenario.stated()
    assert base["model"] == "qwen2.5-14b" and base["task"] == "qlora" and base["gpu"] == "4090"
    assert base["num_gpus"] == 1 and base["batch_size"] == 2 and base["seq_len"] == 2048
    assert_estimate_of(first_events, base)

    two_events = chat(lb.pick(), {"message": "那如果用两张卡呢?", "conversation_id": first.conversation_id})
    two = answered(two_events)
    assert two.language == "zh" and "在上一个问题的基础上修改" in two.answer
    assert_estimate_of(two_events, {**base, "num_gpus": 2})


def test_alternating_replicas_keep_the_turn_order(cluster: Cluster) -> None:
    """Each follow-up goes to the other replica and builds on the turn the previous one stored."""
    lb = RoundRobin(cluster.urls)
    first = answered(chat(lb.pick(), {"message": "LoRA Llama-2-7B on one A100 80GB, batch 1, 2k context"}))
    asked = [first.question]
    for batch in (2, 3, 4, 5, 6, 7):
        question = f"batch {batch}?"
        answer = answered(chat(lb.pick(), {"message": question, "conversation_id": first.conversation_id}))
        assert answer.scenario is not None and answer.scenario.batch_size == batch
        assert answer.scenario.model == "llama-2-7b" and answer.scenario.task == "lora"
        asked.append(question)
    view = stored(cluster.urls[0], first.conversation_id or "")
    assert [t["question"] for t in view["turns"]] == asked
    assert [t["scenario"]["batch_size"] for t in view["turns"]] == [1, 2, 3, 4, 5, 6, 7]


def test_concurrent_writes_from_both_replicas_lose_no_turn(cluster: Cluster) -> None:
    """16 follow-ups at once, 8 through each replica, into ONE conversation: 1 + 16 turns stored, each
    exactly once, and the stored order is the commit order (the conversation's scenario is the one of
    its last stored turn)."""
    lb = RoundRobin(cluster.urls)
    first = answered(chat(lb.pick(), {"message": "LoRA Llama-2-7B on one A100 80GB, batch 1, 2k context"}))
    cid = first.conversation_id
    questions = [f"batch {b}?" for b in range(10, 26)]
    targets = [(lb.pick(), q) for q in questions]
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        results = list(
            pool.map(lambda t: answered(chat(t[0], {"message": t[1], "conversation_id": cid})), targets)
        )
    assert sorted(r.scenario.batch_size for r in results if r.scenario) == list(range(10, 26))

    for base_url in cluster.urls:
        view = stored(base_url, cid or "")
        turns = view["turns"]
        assert len(turns) == 1 + len(questions)
        assert turns[0]["question"] == first.question
        assert sorted(t["question"] for t in turns[1:]) == sorted(questions)  # each exactly once
        assert view["scenario"] == turns[-1]["scenario"]


def test_first_turns_of_openai_users_on_both_replicas_at_once_are_all_stored(cluster: Cluster) -> None:
    """OpenAI `user` names a conversation that does not exist yet: both replicas may create it at the same
    moment (before the fix the later commit died on the primary key and its turn was lost)."""
    users = [f"user-{uuid.uuid4().hex}" for _ in range(6)]
    questions = ["Qwen2.5-7B inference on one H100 in bf16", "Llama-2-7B inference on one RTX 4090"]
    targets = [(base, user, q) for user in users for base, q in zip(cluster.urls, questions, strict=True)]

    def ask(target: tuple[str, str, str]) -> dict[str, Any]:
        base_url, user, question = target
        resp = httpx.post(
            f"{base_url}/v1/chat/completions",
            json={"model": "vramwise", "user": user, "messages": [{"role": "user", "content": question}]},
            timeout=TIMEOUT,
        )
        assert resp.status_code == 200, resp.text
        return resp.json()

    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        bodies = list(pool.map(ask, targets))
    assert sorted(b["conversation_id"] for b in bodies) == sorted(users * 2)
    for user in users:
        turns = stored(cluster.urls[0], user)["turns"]
        assert sorted(t["question"] for t in turns) == sorted(questions)


def test_two_stores_creating_the_same_conversation_at_once(cluster: Cluster) -> None:
    """The same race, made certain: two stores (two replicas' engines) commit the first turn of one new
    conversation in the same instant; both turns are stored, once each."""

    async def run() -> tuple[list[object], list[str]]:
        a, b = ConversationStore(cluster.database_url), ConversationStore(cluster.database_url)
        await a.open()
        await b.open()
        try:
            answer = Answer(question="q", language="en", answer="fine")
            cid = f"race-{uuid.uuid4().hex}"
            results = await asyncio.gather(
                a.append_turn(cid, "from a", answer),
                b.append_turn(cid, "from b", answer),
                return_exceptions=True,
            )
            kept = await a.get(cid)
            return results, sorted(t.question for t in kept.turns) if kept else []
        finally:
            await a.close()
            await b.close()

    results, questions = asyncio.run(run())
    assert results == [None, None]
    assert questions == ["from a", "from b"]


# ---- values PostgreSQL refuses ----------------------------------------------------------------------
def test_a_nul_character_is_stored_and_does_not_fail_the_turn(cluster: Cluster) -> None:
    """PostgreSQL text cannot hold NUL: before the fix the whole group commit failed."""
    lb = RoundRobin(cluster.urls)
    first = answered(chat(lb.pick(), {"message": "Can I run Llama-2-7B inference on one RTX 4090?\u0000"}))
    turns = stored(lb.pick(), first.conversation_id or "")["turns"]
    assert turns[0]["question"] == "Can I run Llama-2-7B inference on one RTX 4090?\ufffd"
    for base_url in cluster.urls:  # an id no conversation can have: 404, not a database error
        resp = httpx.get(f"{base_url}/v1/conversations/ab%00cd", timeout=TIMEOUT)
        assert resp.status_code == 404, resp.text
        resp = httpx.post(f"{base_url}/v1/chat", json={"message": "hi", "conversation_id": "ab\u0000cd"})
        assert resp.status_code == 404, resp.text


def test_one_refused_turn_does_not_lose_the_others_in_its_group_commit(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A value the database refuses (an agent name over VARCHAR(40)) fails its own turn only."""

    async def run() -> tuple[list[object], int]:
        store = ConversationStore(cluster.database_url)
        await store.open()
        try:
            good = Answer(question="q", language="en", answer="fine")
            bad = good.model_copy(update={"agent": "x" * 41})
            results = await asyncio.gather(
                store.append_turn("group-good", "q", good),
                store.append_turn("group-bad", "q", bad),
                store.append_turn("group-good", "q2", good),
                return_exceptions=True,
            )
            kept = await store.get("group-good")
            return results, len(kept.turns) if kept else 0
        finally:
            await store.close()

    with caplog.at_level(logging.WARNING, logger="service.store"):
        results, kept_turns = asyncio.run(run())
    assert "storing them one by one" in caplog.text  # the three were one group commit
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], Exception) and "value too long" in str(results[1])
    assert kept_turns == 2


# ---- readiness (runs last in this module: it stops the database) ------------------------------------
def test_readyz_follows_the_database(cluster: Cluster) -> None:
    lb = RoundRobin(cluster.urls)
    first = answered(chat(lb.pick(), {"message": "Can I run Llama-2-7B inference on one RTX 4090?"}))
    for base_url in cluster.urls:
        assert httpx.get(f"{base_url}/readyz", timeout=TIMEOUT).status_code == 200

    cluster.server.stop()
    try:
        for base_url in cluster.urls:
            started = time.monotonic()
            resp = httpx.get(f"{base_url}/readyz", timeout=TIMEOUT)
            assert resp.status_code == 503, resp.text
            body = resp.json()
            assert {k: body[k] for k in ("status", "store")} == {
                "status": "unavailable",
                "store": "unreachable",
            }
            assert "refused" in body["reason"]  # the store check's own words (service/store_health.py)
            assert time.monotonic() - started < 10
        # a lost store is answered with a clear, retryable 503 on writes (issue 30): a new question and a
        # follow-up alike, never a 500 and never an answer that would be lost
        for body in (
            {"message": "Can I run Llama-2-7B inference on one RTX 4090?"},
            {"message": "what about with LoRA?", "conversation_id": first.conversation_id},
        ):
            resp = httpx.post(f"{lb.pick()}/v1/chat", json=body, timeout=TIMEOUT)
            assert resp.status_code == 503, resp.text
            assert resp.headers["retry-after"] == "5"
            assert "store is unavailable" in resp.json()["error"] and resp.json()["accepted"]
        resp = httpx.get(f"{lb.pick()}/v1/conversations/{first.conversation_id}", timeout=TIMEOUT)
        assert resp.status_code == 503, resp.text
    finally:
        cluster.server.start()

    # back on the same port: the pools replace their dead connections, nothing stored was lost
    for base_url in cluster.urls:
        assert httpx.get(f"{base_url}/readyz", timeout=TIMEOUT).status_code == 200
    follow = answered(
        chat(lb.pick(), {"message": "what about with LoRA?", "conversation_id": first.conversation_id})
    )
    assert follow.scenario is not None and follow.scenario.task == "lora"
    assert follow.scenario.model == "llama-2-7b" and follow.scenario.gpu == "4090"
