"""A server killed with SIGKILL mid-answer loses no question: `vramwise serve` runs as a real subprocess
(uvicorn, its own process group: the offline agent's workers die with it, as in an OOM kill of a
container), the kill comes while an answer is streaming, and a new server on the same SQLite file or
PostgreSQL database shows the question. Two agents: the offline one (killed right after `meta`) and the
LLM agent talking to a slow fake OpenAI endpoint (killed while the endpoint is still answering)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.pg_support import postgres_server
from tests.serve_support import serve as serve_process

__all__ = ["postgres_server"]  # fixture

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Can I fully fine-tune Llama-2-7B on one A100 80GB?"
FOLLOW_UP = "And Llama-2-13B with LoRA on one A100 80GB?"  # self-contained: the first answer was cut off


@contextlib.contextmanager
def serve(env: dict[str, str], log: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """`vramwise serve` on a free port, in its own process group, with `env` over the caller's environment
    (less its VRAMWISE_/OPENAI_ settings; one agent worker process unless `env` says otherwise); yields
    (base URL, process) once /readyz answers (tests/serve_support.py)."""
    full_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("VRAMWISE_", "OPENAI_", "DATABASE_URL"))
    }
    full_env.update(env)
    full_env["VRAMWISE_AGENT_PROCESSES"] = env.get("VRAMWISE_AGENT_PROCESSES", "1")
    with serve_process(full_env, log) as served:
        yield served


def kill_mid_stream(url: str, proc: subprocess.Popen, body: dict, *, before_kill=None) -> str:  # type: ignore[no-untyped-def]
    """POST /v1/chat, read the `meta` event, (wait for `before_kill`), SIGKILL the whole server; the id."""
    with httpx.Client(timeout=30) as client, client.stream("POST", f"{url}/v1/chat", json=body) as resp:
        assert resp.status_code == 200
        lines = resp.iter_lines()
        for line in lines:
            if line.startswith("data:"):
                meta = json.loads(line[5:])
                break
        if before_kill is not None:
            before_kill()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        with contextlib.suppress(httpx.HTTPError):
            for _ in lines:  # the connection dies with the server
                pass
    return meta["conversation_id"]


def stored_turns(url: str, cid: str) -> list[dict]:
    r = httpx.get(f"{url}/v1/conversations/{cid}", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["turns"]


def crash_and_restart(  # type: ignore[no-untyped-def]
    env: dict[str, str], tmp_path: Path, *, cut_off_status: set[str], slow_llm=None, follow_up: bool = False
) -> None:
    log = tmp_path / "server.log"
    wait = None
    if slow_llm is not None:

        def wait() -> None:  # the LLM call is in flight when the server dies
            deadline = time.monotonic() + 20
            while not slow_llm.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            assert slow_llm.requests, "the agent never called the LLM"

    # 1. a new conversation, killed mid-answer
    with serve(env, log) as (url, proc):
        cid = kill_mid_stream(url, proc, {"message": QUESTION}, before_kill=wait)
    with serve(env, log) as (url, proc):
        turns = stored_turns(url, cid)
        assert [t["question"] for t in turns] == [QUESTION]
        assert turns[0]["status"] in cut_off_status, turns
        if not follow_up:
            return
        # 2. a follow-up into that existing conversation, killed mid-answer too
        if slow_llm is not None:
            slow_llm.requests.clear()
        kill_mid_stream(url, proc, {"message": FOLLOW_UP, "conversation_id": cid}, before_kill=wait)
    with serve(env, log) as (url, _proc):
        turns = stored_turns(url, cid)
        assert [t["question"] for t in turns] == [QUESTION, FOLLOW_UP]
        assert turns[1]["status"] in cut_off_status, turns


OFFLINE_CUT = {"interrupted", "in_progress", "done"}  # the offline agent may finish before the kill lands


def test_sqlite_offline_agent_kill_9(tmp_path: Path) -> None:
    env = {
        "VRAMWISE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'crash.sqlite3'}",
        "VRAMWISE_AGENT": "offline",
    }
    crash_and_restart(env, tmp_path, cut_off_status=OFFLINE_CUT - {"in_progress"}, follow_up=True)


def _stalling_llm() -> FakeOpenAI:
    # streams a first delta, then stalls far longer than the test: the answer is in flight at the kill
    return FakeOpenAI([lambda _body: Reply(content="Let me work that out for you.", stall_after_s=120)] * 8)


def _llm_env(fake: FakeOpenAI) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "test",
        "VRAMWISE_LLM_MODEL": "fake-model",
        "VRAMWISE_AGENT": "llm",
        "VRAMWISE_LLM_TIMEOUT_S": "300",
    }


@pytest.mark.slow
def test_sqlite_slow_llm_kill_9(tmp_path: Path) -> None:
    with _stalling_llm() as fake:
        env = {"VRAMWISE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'llm.sqlite3'}", **_llm_env(fake)}
        # on the embedded file the restarted server is its only writer: a cut-off turn is interrupted at once
        crash_and_restart(env, tmp_path, cut_off_status={"interrupted"}, slow_llm=fake, follow_up=True)


@pytest.mark.slow
def test_postgres_offline_and_slow_llm_kill_9(tmp_path: Path, postgres_server) -> None:  # type: ignore[no-untyped-def]
    offline = {"VRAMWISE_DATABASE_URL": postgres_server.new_database(), "VRAMWISE_AGENT": "offline"}
    crash_and_restart(offline, tmp_path, cut_off_status=OFFLINE_CUT)
    with _stalling_llm() as fake:
        env = {"VRAMWISE_DATABASE_URL": postgres_server.new_database(), **_llm_env(fake)}
        # a shared database: another replica may still be answering a recent in_progress turn, so it shows
        # as interrupted only once it is older than any answer takes (store.STALE_TURN_S)
        crash_and_restart(env, tmp_path, cut_off_status={"in_progress", "interrupted"}, slow_llm=fake)
