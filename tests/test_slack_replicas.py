"""Two replicas of the service behind one Slack app, on one database (a SQLite file, and a real PostgreSQL
when installed): a retried event that reaches the other replica is not answered again, and a follow-up
in a thread that lands on the other replica continues the thread's conversation. Also the LLM outage:
the offline answer with its notice, exactly as in the web chat."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.app import create_app
from service.settings import Settings
from tests.fakes.slack_api import FakeSlack
from tests.pg_support import PostgresServer, postgres_server
from tests.service_support import free_port, live_server, offline_settings, reset_sse_exit_flag
from tests.slack_support import (
    BOT_TOKEN,
    SIGNING_SECRET,
    event_body,
    final_message,
    mention,
    next_ts,
    post_json,
    total_of,
)

__all__ = ["postgres_server", "reset_sse_exit_flag"]  # fixtures

pytestmark = pytest.mark.slow


def slack_settings(database_url: str, api_url: str, **overrides: object) -> Settings:
    base: dict[str, object] = {
        "database_url": database_url,
        "agent": "offline",
        "openai_api_key": None,
        "openai_base_url": None,
        "agent_processes": 0,
        "slack_bot_token": BOT_TOKEN,
        "slack_signing_secret": SIGNING_SECRET,
        "slack_api_url": api_url,
    }
    base.update(overrides)
    return Settings(**base)  # type: ignore[arg-type]


@contextlib.contextmanager
def two_replicas(database_url: str, fake: FakeSlack) -> Iterator[tuple[str, str]]:
    with (
        live_server(create_app(slack_settings(database_url, fake.api_url))) as a,
        live_server(create_app(slack_settings(database_url, fake.api_url))) as b,
    ):
        yield a, b


def check_replicas(database_url: str) -> None:
    fake = FakeSlack()
    with fake.running(), two_replicas(database_url, fake) as (a, b), httpx.Client(timeout=30) as client:
        # the first delivery reaches replica A; Slack's retry of it reaches replica B
        body = event_body(mention("serve llama-2-7b on an L4", channel="C0REPL", ts=(ts := next_ts())))
        assert post_json(client, a, body).status_code == 200
        first = final_message(fake, "C0REPL")
        assert post_json(client, b, body, **{"X-Slack-Retry-Num": "1"}).status_code == 200
        time.sleep(1.0)  # time enough for a second answer to start, were there one
        starts = [c for c in fake.of("chat.startStream") if c.body.get("channel") == "C0REPL"]
        assert len(starts) == 1
        # the follow-up in the thread lands on replica B: the conversation (and its scenario) is shared
        fake.reset()
        post_json(client, b, event_body(mention("and in int4?", channel="C0REPL", thread_ts=ts)))
        follow = final_message(fake, "C0REPL")
    bf16 = total_of(model="llama-2-7b", task="inference", gpu="L4", num_gpus=1)
    int4 = total_of(model="llama-2-7b", task="inference", gpu="L4", num_gpus=1, weight_dtype="int4")
    assert f"**{bf16}**" in first.body["blocks"][0]["text"]
    assert f"**{int4}**" in follow.body["blocks"][0]["text"]


def test_two_replicas_on_one_sqlite_file(tmp_path: Path) -> None:
    check_replicas(f"sqlite+aiosqlite:///{tmp_path / 'shared.sqlite3'}")


def test_two_replicas_on_postgresql(postgres_server: PostgresServer) -> None:
    check_replicas(postgres_server.new_database())


def test_llm_outage_gives_the_offline_answer_with_its_notice(tmp_path: Path) -> None:
    fake = FakeSlack()
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with fake.running():
        settings = offline_settings(
            tmp_path / "s.sqlite3",
            agent="llm",
            openai_api_key="test",
            openai_base_url=dead,
            llm_timeout_s=2.0,
            agent_processes=0,
            slack_bot_token=BOT_TOKEN,
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=fake.api_url,
        )
        with live_server(create_app(settings)) as base, httpx.Client(timeout=30) as client:
            post_json(client, base, event_body(mention("serve llama-2-7b on an L4", channel="C0LLM")))
            final = final_message(fake, "C0LLM", timeout=60)
    blocks = final.body["blocks"]
    assert f"**{total_of(model='llama-2-7b', task='inference', gpu='L4', num_gpus=1)}**" in blocks[0]["text"]
    notice = blocks[1]
    assert notice["type"] == "context" and "offline" in notice["elements"][0]["text"].lower()
