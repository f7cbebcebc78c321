"""The Slack channel end to end: the real app under a real uvicorn on 127.0.0.1, correctly signed Slack
requests, and a fake Slack Web API (tests/fakes/slack_api.py, a real HTTP server on port 0) that records
every call the app makes. Figures are checked against the estimator run directly on the same scenario."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.app import create_app
from service.settings import Settings
from tests.fakes.slack_api import BOT_USER_ID, Call, FakeSlack, rate_limited, refused
from tests.service_support import offline_settings
from tests.slack_support import (
    USER_ID,
    block_action_form,
    block_texts,
    command_form,
    direct_message,
    event_body,
    final_message,
    fits_word,
    mention,
    next_ts,
    post_form,
    post_json,
    shows,
    signed_headers,
    slack_service,
    total_of,
)
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import fmt_gib

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeSlack, str, httpx.Client]]:
    with slack_service(tmp_path_factory.mktemp("slack") / "store.sqlite3") as running:
        yield running


def calls_in(fake: FakeSlack, channel: str) -> list[Call]:
    return [c for c in fake.calls if c.body.get("channel") == channel or c.body.get("channel_id") == channel]


def test_url_verification(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    _fake, base, client = slack
    r = post_json(
        client,
        base,
        {
            "token": "legacy",
            "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
            "type": "url_verification",
        },
    )
    assert r.status_code == 200
    assert "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" in r.text


def test_slash_command_acks_at_once_then_answers_in_channel(
    slack: tuple[FakeSlack, str, httpx.Client],
) -> None:
    fake, base, client = slack
    url = fake.response_url("cmd-answer")
    started = time.monotonic()
    r = post_form(
        client, base, command_form("Can I fine-tune llama-2-7b with QLoRA on one 4090?", url, channel="C0CMD")
    )
    ack_s = time.monotonic() - started
    assert r.status_code == 200 and ack_s < 3.0
    assert "Estimating" in r.json()["text"] and r.json()["response_type"] == "ephemeral"
    posted = fake.wait_for(lambda f: [c for c in f.of("response_url") if c.path.endswith("cmd-answer")])
    message = posted[0].body
    assert message["response_type"] == "in_channel"
    expected = total_of(model="llama-2-7b", task="qlora", gpu="4090", num_gpus=1)
    assert expected == "6.34 GiB"
    assert message["blocks"][0]["type"] == "markdown"
    assert fits_word(message["blocks"][0]["text"], True, "en") and shows(
        message["blocks"][0]["text"], expected
    )
    assert expected in message["text"]
    table = next(b for b in message["blocks"] if b["type"] == "table")
    assert [c["text"] for c in table["rows"][-1]][1] == expected
    assert any(b["type"] == "actions" for b in message["blocks"])


def test_slash_help_and_quiz_answer_in_the_ack(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    fake, base, client = slack
    r = post_form(client, base, command_form("help", fake.response_url("help")))
    assert r.status_code == 200 and "/vram <question>" in r.json()["text"]
    r = post_form(client, base, command_form("帮助", fake.response_url("help-zh")))
    assert "显存" in r.json()["text"]
    r = post_form(client, base, command_form("quiz", fake.response_url("quiz")))
    assert "answer in its thread" in r.json()["text"]  # the question itself: tests/test_coach_slack.py
    time.sleep(0.3)
    assert not [c for c in fake.of("response_url") if c.path.endswith(("help", "help-zh", "quiz"))]


def test_mention_streams_a_threaded_answer_with_the_tools_figures(
    slack: tuple[FakeSlack, str, httpx.Client],
) -> None:
    fake, base, client = slack
    ts = next_ts()
    r = post_json(client, base, event_body(mention("serve llama-2-7b on an L4", channel="C0MENTION", ts=ts)))
    assert r.status_code == 200
    final = final_message(fake, "C0MENTION")
    start = fake.of("chat.startStream")
    mine = [c for c in start if c.body.get("channel") == "C0MENTION"]
    assert len(mine) == 1 and mine[0].body["thread_ts"] == ts  # streamed in the message's thread
    assert mine[0].body["recipient_user_id"] == USER_ID and mine[0].body["recipient_team_id"]
    stream_ts = fake.wait_for(lambda f: f.of("chat.stopStream"))[0].body["ts"]
    assert final.method == "chat.update" and final.body["ts"] == stream_ts
    statuses = [c for c in fake.of("assistant.threads.setStatus") if c.body.get("channel_id") == "C0MENTION"]
    assert statuses and statuses[0].body["status"] == "estimating..." and statuses[0].at <= mine[0].at
    expected = total_of(model="llama-2-7b", task="inference", gpu="L4", num_gpus=1)
    assert expected == "16.26 GiB"
    assert shows(final.body["blocks"][0]["text"], expected)
    assert "Serving capacity" in block_texts(final.body["blocks"])
    # appends are batched: far fewer calls than the agent's lines
    appends = [c for c in fake.of("chat.appendStream") if c.body.get("channel") == "C0MENTION"]
    assert len(appends) < 20

    # a mention inside the thread continues its conversation: "and in int4?" modifies the last scenario
    fake.reset()
    post_json(client, base, event_body(mention("and in int4?", channel="C0MENTION", thread_ts=ts)))
    follow = final_message(fake, "C0MENTION")
    int4 = total_of(model="llama-2-7b", task="inference", gpu="L4", num_gpus=1, weight_dtype="int4")
    assert int4 == "6.89 GiB"
    assert shows(follow.body["blocks"][0]["text"], int4)
    assert all(c.body.get("thread_ts") in (None, ts) for c in calls_in(fake, "C0MENTION"))


def test_direct_messages_continue_the_conversation(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    fake, base, client = slack
    fake.reset()
    ts = next_ts()
    post_json(
        client,
        base,
        event_body(
            direct_message("Can I fine-tune llama-2-7b with QLoRA on one 4090?", ts=ts, channel="D0DM1")
        ),
    )
    first = final_message(fake, "D0DM1")
    assert "6.34 GiB" in first.body["blocks"][0]["text"]
    # in the answer's thread (an assistant thread: bolt's AsyncAssistant user_message)
    fake.reset()
    post_json(
        client, base, event_body(direct_message("full fine-tune instead", channel="D0DM1", thread_ts=ts))
    )
    second = final_message(fake, "D0DM1")
    expected = total_of(model="llama-2-7b", task="full_finetune", gpu="4090", num_gpus=1)
    assert shows(second.body["blocks"][0]["text"], expected)
    # the next top-level DM message continues the DM's conversation too
    fake.reset()
    post_json(client, base, event_body(direct_message("and on 8 GPUs?", channel="D0DM1")))
    third = final_message(fake, "D0DM1")
    eight = total_of(model="llama-2-7b", task="full_finetune", gpu="4090", num_gpus=8)
    assert "8 x GeForce RTX 4090" in third.body["blocks"][0]["text"]
    assert shows(third.body["blocks"][0]["text"], eight)
    # the bot's own messages are ignored
    fake.reset()
    own = direct_message("hello", channel="D0DM1")
    own["bot_id"] = "BVRAM"
    own["user"] = BOT_USER_ID
    assert post_json(client, base, event_body(own)).status_code == 200
    time.sleep(0.5)
    assert not calls_in(fake, "D0DM1")


def test_chinese_question_gets_a_chinese_answer(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    fake, base, client = slack
    post_json(
        client, base, event_body(mention("在一张 4090 上全参微调 llama-2-7b 需要多少显存？", channel="C0ZH"))
    )
    final = final_message(fake, "C0ZH")
    expected = total_of(model="llama-2-7b", task="full_finetune", gpu="4090", num_gpus=1)
    head = final.body["blocks"][0]["text"]
    assert fits_word(head, False, "zh") and shows(head, expected)
    texts = block_texts(final.body["blocks"])
    assert "组成部分" in texts and "显示公式" in texts and "Verdict" not in texts


def test_bad_signature_and_stale_timestamp_are_refused_before_anything_runs(
    slack: tuple[FakeSlack, str, httpx.Client],
) -> None:
    fake, base, client = slack
    time.sleep(0.5)  # earlier answers have finished
    fake.reset()
    raw = json.dumps(event_body(mention("serve llama-2-7b on an L4", channel="C0BAD")))
    bad = client.post(
        f"{base}/slack/events",
        content=raw,
        headers={"Content-Type": "application/json", **signed_headers(raw, secret="not-the-secret")},
    )
    assert bad.status_code == 401
    stale = client.post(
        f"{base}/slack/events",
        content=raw,
        headers={
            "Content-Type": "application/json",
            **signed_headers(raw, timestamp=int(time.time()) - 6 * 60),
        },
    )
    assert stale.status_code == 401
    missing = client.post(f"{base}/slack/events", content=raw, headers={"Content-Type": "application/json"})
    assert missing.status_code == 401
    form = command_form("serve llama-2-7b on an L4", fake.response_url("bad"))
    tampered = client.post(
        f"{base}/slack/events",
        content=form.replace("L4", "H100"),
        headers={"Content-Type": "application/x-www-form-urlencoded", **signed_headers(form)},
    )
    assert tampered.status_code == 401
    time.sleep(1.0)
    assert fake.calls == []  # no Web API call, no response_url, no agent run


def test_a_retried_event_is_answered_once(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    fake, base, client = slack
    body = event_body(mention("serve llama-2-7b on an L4", channel="C0RETRY"), event_id="EvRETRY0001")
    assert post_json(client, base, body).status_code == 200
    final_message(fake, "C0RETRY")
    for n in (1, 2):
        r = post_json(
            client, base, body, **{"X-Slack-Retry-Num": str(n), "X-Slack-Retry-Reason": "http_timeout"}
        )
        assert r.status_code == 200
    time.sleep(1.5)
    starts = [c for c in fake.of("chat.startStream") if c.body.get("channel") == "C0RETRY"]
    finals = [c for c in fake.of("chat.update") if c.body.get("channel") == "C0RETRY"]
    assert len(starts) == 1 and len(finals) == 1


def test_a_429_is_waited_out(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    fake, base, client = slack
    fake.reset()
    fake.script("chat.update", rate_limited(1))
    post_json(client, base, event_body(mention("serve llama-2-7b on an L4", channel="C0LIMIT")))
    final = final_message(fake, "C0LIMIT")
    updates = [c for c in fake.of("chat.update") if c.body.get("channel") == "C0LIMIT"]
    assert [c.status for c in updates] == [429, 200]
    assert final.at - updates[0].at >= 1.0  # Retry-After: 1 was honoured
    assert "16.26 GiB" in final.body["blocks"][0]["text"]


def test_stream_refused_falls_back_to_post_and_update(
    slack: tuple[FakeSlack, str, httpx.Client], caplog: pytest.LogCaptureFixture
) -> None:
    fake, base, client = slack
    caplog.set_level(logging.WARNING, logger="service.slack")
    fake.reset()
    fake.script("chat.startStream", refused("not_allowed_token_type"))
    ts = next_ts()
    post_json(client, base, event_body(mention("serve llama-2-7b on an L4", channel="C0FALLBACK", ts=ts)))
    final = final_message(fake, "C0FALLBACK")
    posts = [c for c in fake.of("chat.postMessage") if c.body.get("channel") == "C0FALLBACK"]
    assert len(posts) == 1 and posts[0].body["thread_ts"] == ts  # the placeholder, in the thread
    assert final.method == "chat.update" and final.body["ts"]
    assert not [c for c in fake.of("chat.appendStream") if c.body.get("channel") == "C0FALLBACK"]
    # the refusal is logged with Slack's request id
    assert any(
        "not_allowed_token_type" in r.message and "req-chat.startStream" in r.message for r in caplog.records
    )
    assert "16.26 GiB" in final.body["blocks"][0]["text"]


def test_stream_timed_out_is_finished_with_update(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    fake, base, client = slack
    fake.reset()
    fake.script("chat.stopStream", refused("message_not_in_streaming_state"))
    post_json(client, base, event_body(mention("serve llama-2-7b on an L4", channel="C0EXPIRED")))
    final = final_message(fake, "C0EXPIRED")
    start = [c for c in fake.of("chat.startStream") if c.body.get("channel") == "C0EXPIRED"]
    assert start and final.method == "chat.update"


def test_show_formulas_posts_the_cited_derivation_in_the_thread(
    slack: tuple[FakeSlack, str, httpx.Client],
) -> None:
    fake, base, client = slack
    fake.reset()
    ts = next_ts()
    post_json(
        client,
        base,
        event_body(mention("Can I fine-tune llama-2-7b with QLoRA on one 4090?", channel="C0FORM", ts=ts)),
    )
    final = final_message(fake, "C0FORM")
    button = next(b for b in final.body["blocks"] if b["type"] == "actions")["elements"][0]
    assert button["action_id"] == "show_formulas" and button["text"]["text"] == "Show formulas"
    fake.reset()
    form = block_action_form(
        button["value"],
        channel="C0FORM",
        message_ts=final.body["ts"],
        thread_ts=ts,
        response_url=fake.response_url("act"),
    )
    assert post_form(client, base, form).status_code == 200
    posted = fake.wait_for(
        lambda f: [c for c in f.of("chat.postMessage") if c.body.get("channel") == "C0FORM"]
    )
    derivation = block_texts(posted[0].body["blocks"])
    assert posted[0].body["thread_ts"] == ts
    assert "Formulas and sources" in derivation
    assert "formula:" in derivation and "source:" in derivation
    est = estimate(Scenario(model="llama-2-7b", task="qlora", gpu="4090", num_gpus=1))
    for component in est.components:  # every component's substituted formula, as the estimator wrote it
        assert component.substituted.split(" = ")[-1] in derivation
    assert fmt_gib(est.per_gpu.total_bytes) in derivation


def test_slack_off_answers_404(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    app = create_app(
        offline_settings(
            tmp_path / "s.sqlite3", agent_processes=0, slack_bot_token=None, slack_signing_secret=None
        )
    )
    with TestClient(app) as c:
        r = c.post("/slack/events", json={"type": "url_verification", "challenge": "x"})
        assert r.status_code == 404
        assert "VRAMWISE_SLACK_SIGNING_SECRET" in r.json()["error"]


def test_assistant_thread_started_greets_and_suggests_prompts(
    slack: tuple[FakeSlack, str, httpx.Client],
) -> None:
    fake, base, client = slack
    fake.reset()
    thread = next_ts()
    event = {
        "type": "assistant_thread_started",
        "assistant_thread": {
            "user_id": USER_ID,
            "context": {"channel_id": "C0ROOM", "team_id": "T0VRAM", "enterprise_id": None},
            "channel_id": "D0PANEL",
            "thread_ts": thread,
        },
        "event_ts": thread,
    }
    assert post_json(client, base, event_body(event)).status_code == 200
    prompts = fake.wait_for(lambda f: f.of("assistant.threads.setSuggestedPrompts"))[0].body
    assert prompts["channel_id"] == "D0PANEL" and prompts["thread_ts"] == thread
    assert "Can I fine-tune Llama-3-8B on one 4090?" in [p["message"] for p in prompts["prompts"]]
    greeting = fake.wait_for(
        lambda f: [c for c in f.of("chat.postMessage") if c.body.get("channel") == "D0PANEL"]
    )
    assert greeting[0].body["thread_ts"] == thread and "GPU memory" in greeting[0].body["text"]


def test_bad_input_gets_the_agents_clear_error(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    """The same message as every channel (the agent's ErrorEvent), never a traceback."""
    from service.agent.base import ConversationState
    from service.agent.events import ErrorEvent
    from service.agent.factory import build_agent

    fake, base, client = slack
    question = "LoRA on one 4090 with 5 GPUs"

    async def agent_error() -> str:
        agent = build_agent(Settings(agent="offline", openai_api_key=None, openai_base_url=None))
        async for ev in agent.stream(question, ConversationState()):
            if isinstance(ev, ErrorEvent):
                return ev.message
        raise AssertionError("the agent answered")

    expected = asyncio.run(agent_error())
    url = fake.response_url("cmd-error")
    assert post_form(client, base, command_form(question, url)).status_code == 200
    posted = fake.wait_for(lambda f: [c for c in f.of("response_url") if c.path.endswith("cmd-error")])
    assert posted[0].body["blocks"][0]["text"] == f":warning: {expected}"
    assert "Traceback" not in json.dumps(posted[0].body)
