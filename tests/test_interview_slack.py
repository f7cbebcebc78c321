"""`/vram interview` on the Slack channel: the real app under uvicorn, signed requests, the fake Slack Web
API. The interviewer's first question is posted in the channel; every answer in its thread is answered
there: a wrong first answer gets a follow-up (no figure told yet), then right answers (one as a mention)
carry the interview to its end and the scorecard is posted in the thread. The answers are written from
the stored question's estimator figure (the service's database)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.slack_api import TEAM_ID, FakeSlack
from tests.interview_support import right_answer, wrong_answer
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
    db = tmp_path_factory.mktemp("interviewslack") / "store.sqlite3"
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


def open_turn(db: Path, channel: str) -> tuple[str, dict, dict] | None:
    """(the interview thread's ts, expected, spec) of the open question; None when there is none."""
    try:
        with sqlite3.connect(db) as conn:
            key, interview = conn.execute(
                "SELECT key, interview_id FROM coach_interview_threads WHERE key LIKE ?", (f"%:{channel}:%",)
            ).fetchone()
            expected, spec = conn.execute(
                "SELECT expected, spec FROM coach_interview_turns WHERE interview_id = ? AND correct IS NULL",
                (interview,),
            ).fetchone()
    except (TypeError, sqlite3.OperationalError):
        return None
    return key.rsplit(":", 1)[1], json.loads(expected), json.loads(spec)


def posts_in_thread(fake: FakeSlack, channel: str, ts: str) -> list[dict]:
    return [
        c.body
        for c in fake.of("chat.postMessage")
        if c.body.get("channel") == channel and c.body.get("thread_ts") == ts
    ]


@pytest.mark.parametrize(
    ("language", "command", "channel"),
    [("en", "interview", "C0INTEN"), ("zh", "面试", "C0INTZH")],
)
def test_interview_in_a_thread(slack, language: str, command: str, channel: str) -> None:  # type: ignore[no-untyped-def]
    fake, base, client, db = slack
    r = post_form(client, base, command_form(command, fake.response_url(f"iv-{channel}"), channel=channel))
    assert r.status_code == 200
    assert ("消息串" if language == "zh" else "answer in its thread") in r.json()["text"]
    posted = fake.wait_for(
        lambda f: [
            c
            for c in f.of("chat.postMessage")
            if c.body.get("channel") == channel and not c.body.get("thread_ts")
        ]
    )
    assert ("先热个身" if language == "zh" else "Let's warm up") in posted[0].body["text"]
    ts, expected, spec = fake.wait_for(lambda f: open_turn(db, channel))

    # a wrong answer: a follow-up on the same point, the figure not told yet
    post_json(
        client,
        base,
        event_body(thread_reply(wrong_answer(expected, spec, language), channel=channel, thread_ts=ts)),
    )
    reply = fake.wait_for(lambda f: posts_in_thread(f, channel, ts))[0]["text"]
    assert ("不太对" if language == "zh" else "Not quite") in reply
    assert f"{expected['bytes'] / 2**30:.2f} GiB" not in reply.split("\n\n", 1)[0]
    assert ("倍" if language == "zh" else "x what I get") in reply  # the follow-up, from the difference

    # right answers to the end (the third one as a mention in the thread)
    answered = 1
    while True:
        found = open_turn(db, channel)
        if found is None:
            break
        _, expected, spec = found
        text = right_answer(expected, spec, language)
        event = (
            mention(text, channel=channel, thread_ts=ts)
            if answered == 2
            else thread_reply(text, channel=channel, thread_ts=ts)
        )
        post_json(client, base, event_body(event))
        answered += 1
        fake.wait_for(lambda f, n=answered: len(posts_in_thread(f, channel, ts)) >= n)
        assert answered < 20
    final = posts_in_thread(fake, channel, ts)[-1]["text"]
    assert ("面试到这里结束" if language == "zh" else "That's the interview") in final
    assert ("接下来复习" if language == "zh" else "Study next") in final and "kb/" in final
    assert ("追问后答对" if language == "zh" else "right after follow-ups") in final  # the first point
    # the agent never answered in the interview thread (no stream started there)
    assert not [c for c in fake.of("chat.startStream") if c.body.get("channel") == channel]
