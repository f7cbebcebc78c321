"""`/vram quiz [topic]` on the Slack channel: the real app under uvicorn, signed requests, the fake Slack
Web API. The question is posted in the channel; a wrong answer in its thread is graded there with the
estimator's figure and breakdown, the next question follows; a right answer (as a mention in the thread)
scores. Answers are written from the stored question's figure (the service's database)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.coach_support import right_answer
from tests.fakes.slack_api import TEAM_ID, FakeSlack
from tests.slack_support import (
    USER_ID,
    command_form,
    event_body,
    mention,
    next_ts,
    post_form,
    post_json,
    slack_service,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeSlack, str, httpx.Client, Path]]:
    db = tmp_path_factory.mktemp("coachslack") / "store.sqlite3"
    with slack_service(db) as (fake, base, client):
        yield fake, base, client, db


def thread_reply(text: str, *, channel: str, thread_ts: str) -> dict[str, Any]:
    return {
        "type": "message",
        "channel_type": "channel",
        "user": USER_ID,
        "text": text,
        "ts": next_ts(),
        "thread_ts": thread_ts,
        "channel": channel,
        "team": TEAM_ID,
    }


def open_question(db: Path, channel: str) -> tuple[str, dict, dict]:
    """(the quiz thread's ts, the expected figure and the spec of its open question)."""
    with sqlite3.connect(db) as conn:
        key, session = conn.execute(
            "SELECT key, session_id FROM coach_threads WHERE key LIKE ?", (f"%:{channel}:%",)
        ).fetchone()
        expected, spec = conn.execute(
            "SELECT expected, spec FROM coach_questions WHERE session_id = ? AND correct IS NULL", (session,)
        ).fetchone()
    return key.rsplit(":", 1)[1], json.loads(expected), json.loads(spec)


def posts_in_thread(fake: FakeSlack, channel: str, ts: str) -> list[dict]:
    return [
        c.body
        for c in fake.of("chat.postMessage")
        if c.body.get("channel") == channel and c.body.get("thread_ts") == ts
    ]


@pytest.mark.parametrize(
    ("language", "command", "channel"),
    [("en", "quiz kv_cache", "C0QUIZEN"), ("zh", "练习 kv_cache", "C0QUIZZH")],
)
def test_quiz_in_a_thread(slack, language: str, command: str, channel: str) -> None:  # type: ignore[no-untyped-def]
    fake, base, client, db = slack
    r = post_form(client, base, command_form(command, fake.response_url(f"quiz-{channel}"), channel=channel))
    assert r.status_code == 200
    assert ("消息串" if language == "zh" else "answer in its thread") in r.json()["text"]
    posted = fake.wait_for(
        lambda f: [
            c
            for c in f.of("chat.postMessage")
            if c.body.get("channel") == channel and not c.body.get("thread_ts")
        ]
    )
    assert ("KV 缓存" if language == "zh" else "KV cache") in posted[0].body["text"]
    ts, expected, _spec = fake.wait_for(lambda f: _try(open_question, db, channel))
    b = expected["bytes"]

    wrong = f"大概 {4 * b / 10**9:.1f} GB" if language == "zh" else f"about {4 * b / 10**9:.1f} GB"
    post_json(client, base, event_body(thread_reply(wrong, channel=channel, thread_ts=ts)))
    reply = fake.wait_for(lambda f: posts_in_thread(f, channel, ts))[0]["text"]
    assert ("不太对" if language == "zh" else "Not quite") in reply
    assert f"{b / 2**30:.2f} GiB" in reply and "2 x L x g x d x B" in reply

    _, expected2, spec2 = open_question(db, channel)  # the next question, posted with the grade
    right = right_answer(expected2, spec2, language)
    post_json(client, base, event_body(mention(right, channel=channel, thread_ts=ts)))
    graded = fake.wait_for(lambda f: posts_in_thread(f, channel, ts)[1:])[0]["text"]
    assert ("正确" if language == "zh" else "Correct") in graded
    assert ("得分：1/2" if language == "zh" else "Score: 1/2") in graded
    # the agent never answered in the quiz thread (no stream started there)
    assert not [c for c in fake.of("chat.startStream") if c.body.get("channel") == channel]


def test_unknown_quiz_topic_says_what_is_accepted(slack) -> None:  # type: ignore[no-untyped-def]
    fake, base, client, _db = slack
    r = post_form(
        client, base, command_form("quiz kv-cach", fake.response_url("quiz-bad"), channel="C0QUIZBAD")
    )
    text = r.json()["text"]
    assert "kv-cach" in text and "kv_cache?" in text and "seed" in text


def _try(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return fn(*args)
    except (TypeError, sqlite3.OperationalError):
        return None
