"""Signed Slack requests for the tests and the benchmark: Events API callbacks, the /vram slash
command and block actions, signed as Slack signs them (v0=HMAC-SHA256(secret, "v0:{ts}:{body}"),
slack_sdk's SignatureVerifier.generate_signature)."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
from slack_sdk.signature import SignatureVerifier

from service.app import create_app
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID, Call, FakeSlack
from tests.service_support import live_server, offline_settings
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import fmt_gib

SIGNING_SECRET = "test-signing-secret"
BOT_TOKEN = "xoxb-test-token"
USER_ID = "U0ASKER"

_ids = itertools.count(1)


@contextlib.contextmanager
def slack_service(db: Path) -> Iterator[tuple[FakeSlack, str, httpx.Client]]:
    """A fake Slack Web API on loopback and a real uvicorn serving the app with Slack on, against it."""
    fake = FakeSlack()
    with fake.running():
        settings = offline_settings(
            db,
            agent_processes=0,
            slack_bot_token=BOT_TOKEN,
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=fake.api_url,
        )
        with live_server(create_app(settings)) as base, httpx.Client(timeout=30) as client:
            yield fake, base, client


def signed_headers(
    body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None
) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}


def next_ts() -> str:
    return f"{1_800_000_000 + next(_ids)}.000200"


def event_body(event: dict[str, Any], *, event_id: str | None = None) -> dict[str, Any]:
    return {
        "token": "legacy",
        "team_id": TEAM_ID,
        "api_app_id": "AVRAM",
        "type": "event_callback",
        "event_id": event_id or f"Ev{next(_ids):08d}",
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
        "event": event,
    }


def mention(
    text: str, *, channel: str = "C0ROOM", ts: str | None = None, thread_ts: str | None = None
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "app_mention",
        "user": USER_ID,
        "text": f"<@{BOT_USER_ID}> {text}",
        "ts": ts or next_ts(),
        "channel": channel,
        "team": TEAM_ID,
        "event_ts": ts,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def direct_message(
    text: str, *, channel: str = "D0DM", ts: str | None = None, thread_ts: str | None = None
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "message",
        "channel_type": "im",
        "user": USER_ID,
        "text": text,
        "ts": ts or next_ts(),
        "channel": channel,
        "team": TEAM_ID,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def command_form(text: str, response_url: str, *, channel: str = "C0ROOM", user: str = USER_ID) -> str:
    return urlencode(
        {
            "token": "legacy",
            "team_id": TEAM_ID,
            "channel_id": channel,
            "user_id": user,
            "command": "/vram",
            "text": text,
            "response_url": response_url,
            "trigger_id": f"trigger.{next(_ids)}",
            "api_app_id": "AVRAM",
        }
    )


def block_action_form(
    value: str, *, channel: str, message_ts: str, thread_ts: str | None, response_url: str
) -> str:
    container: dict[str, Any] = {"type": "message", "message_ts": message_ts, "channel_id": channel}
    if thread_ts:
        container["thread_ts"] = thread_ts
    payload = {
        "type": "block_actions",
        "team": {"id": TEAM_ID},
        "user": {"id": USER_ID},
        "api_app_id": "AVRAM",
        "container": container,
        "channel": {"id": channel},
        "message": {"ts": message_ts, "thread_ts": thread_ts, "text": "answer"},
        "response_url": response_url,
        "trigger_id": f"trigger.{next(_ids)}",
        "actions": [{"type": "button", "action_id": "show_formulas", "block_id": "b", "value": value}],
    }
    return urlencode({"payload": json.dumps(payload)})


def post_json(client: httpx.Client, base: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    raw = json.dumps(body)
    return client.post(
        f"{base}/slack/events",
        content=raw,
        headers={"Content-Type": "application/json", **signed_headers(raw), **headers},
    )


def post_form(client: httpx.Client, base: str, raw: str, **headers: str) -> httpx.Response:
    return client.post(
        f"{base}/slack/events",
        content=raw,
        headers={"Content-Type": "application/x-www-form-urlencoded", **signed_headers(raw), **headers},
    )


def block_texts(blocks: list[dict[str, Any]]) -> str:
    """Every text of a Block Kit message, joined (table cells, section/markdown/context texts, buttons)."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "text" and isinstance(value, str):
                    out.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(blocks)
    return "\n".join(out)


def shows(text: str, figure: str) -> bool:
    """`figure` ("16.26 GiB") is written in `text` as a figure of its own (not the tail of "116.26 GiB")."""
    return re.search(rf"(?<![\d.,]){re.escape(figure)}", text) is not None


def fits_word(text: str, fits: bool, language: str) -> bool:
    """The verdict is said in `text`: English "fits" / "does not fit", Chinese 放得下 / 放不下."""
    if language == "zh":
        return ("放得下" if fits else "放不下") in text
    lowered = text.lower()
    return ("does not fit" in lowered) if not fits else ("fits" in lowered and "does not fit" not in lowered)


def total_of(**scenario: Any) -> str:
    """The per-GPU total as every channel shows it, from the estimator itself."""
    return fmt_gib(estimate(Scenario(**scenario)).per_gpu.total_bytes)


def final_message(fake: FakeSlack, channel: str, timeout: float = 30) -> Call:
    """The answer's final Block Kit message in `channel` (the one with the component table)."""

    def find(f: FakeSlack) -> Call | None:
        for call in f.of("chat.update") + f.of("chat.postMessage"):
            blocks = call.body.get("blocks") or []
            if (
                call.status == 200
                and call.body.get("channel") == channel
                and any(b.get("type") == "table" for b in blocks)
            ):
                return call
        return None

    return fake.wait_for(find, timeout)
