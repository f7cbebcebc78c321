"""Issue 30, items 3 and 6, on a real `vramwise serve` with a fake Slack Web API on loopback: an outsider's
Slack request is a 4xx saying what is accepted, never a 500 or a traceback in the log (a timestamp of `abc`
was a 500 with a 917-byte traceback; signed bodies of the wrong shape were 500s), and a signed request is
answered once (a `/vram` command replayed within Slack's 5-minute window was answered every time)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fakes.slack_api import FakeSlack
from tests.serve_support import serve, serve_env
from tests.slack_support import BOT_TOKEN, SIGNING_SECRET, command_form, event_body, signed_headers

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


@pytest.fixture(scope="module")
def slack_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeSlack, str, Path]]:
    tmp = tmp_path_factory.mktemp("slack-gate")
    fake = FakeSlack()
    with fake.running():
        env = serve_env(
            tmp / "db.sqlite3",
            VRAMWISE_SLACK_BOT_TOKEN=BOT_TOKEN,
            VRAMWISE_SLACK_SIGNING_SECRET=SIGNING_SECRET,
            VRAMWISE_SLACK_API_URL=fake.api_url,
        )
        log = tmp / "server.log"
        with serve(env, log) as (url, _):
            yield fake, url, log


def _signed_post(url: str, body: str, content_type: str, **headers: str) -> httpx.Response:
    sent = {"Content-Type": content_type, **signed_headers(body), **headers}
    return httpx.post(f"{url}/slack/events", content=body.encode(), headers=sent, timeout=30)


def test_unsigned_and_badly_signed_requests_are_401(slack_serve: tuple[FakeSlack, str, Path]) -> None:
    _, url, log = slack_serve
    cases = [
        {"X-Slack-Request-Timestamp": "abc", "X-Slack-Signature": "v0=" + "0" * 64},
        {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=" + "0" * 64},
        {"X-Slack-Request-Timestamp": "1", "X-Slack-Signature": "nonsense"},
        {},
    ]
    for headers in cases:
        r = httpx.post(f"{url}/slack/events", content=b"token=x", headers={"Content-Type": FORM, **headers})
        assert r.status_code == 401, (headers, r.text)
        assert r.json()["accepted"].startswith("a request signed by Slack")
    stale = signed_headers("token=x", timestamp=int(time.time()) - 600)
    r = httpx.post(f"{url}/slack/events", content=b"token=x", headers={"Content-Type": FORM, **stale})
    assert r.status_code == 401
    assert "Traceback" not in log.read_text()


MALFORMED = [
    ("payload=notjson", FORM),
    ("payload=%5B1%2C2%5D", FORM),
    ("payload=null", FORM),
    ("payload=" + json.dumps({"type": "block_actions", "actions": "x"}), FORM),
    ("command=%2Fvram&text=hi&user_id=U1&channel_id=C1", FORM),
    ("command=%2Fvram&text=hi&user_id=U1&channel_id=C1&response_url=notaurl", FORM),
    ("[1, 2]", JSON),
    ("null", JSON),
    ("{", JSON),
    (json.dumps({"type": "event_callback", "event": "x"}), JSON),
    (
        json.dumps(
            event_body({"type": "app_mention", "text": 5, "user": "U1", "channel": "C1", "ts": "1.2"})
        ),
        JSON,
    ),
    (json.dumps(event_body({"type": "app_mention", "text": "hi", "user": "U1", "ts": "1.2"})), JSON),
    (json.dumps(event_body({"type": "message"})), JSON),
    ("a=b", FORM),
]


def test_signed_bodies_of_the_wrong_shape_are_4xx_without_a_traceback(
    slack_serve: tuple[FakeSlack, str, Path],
) -> None:
    _, url, log = slack_serve
    for body, content_type in MALFORMED:
        r = _signed_post(url, body, content_type)
        assert r.status_code in (400, 404), (body, r.status_code, r.text)
        assert r.json()["accepted"], (body, r.text)
    time.sleep(1.0)  # anything that still ran in the background has logged by now
    text = log.read_text()
    assert "Traceback" not in text and "Failed to run" not in text, text[-3000:]


def test_a_replayed_command_is_answered_once(slack_serve: tuple[FakeSlack, str, Path]) -> None:
    fake, url, _ = slack_serve
    answer_url = fake.response_url("replayed")
    body = command_form("Can I run llama-2-7b inference on one 4090?", answer_url)
    headers = {"Content-Type": FORM, **signed_headers(body)}
    codes = [
        httpx.post(f"{url}/slack/events", content=body, headers=headers, timeout=30).status_code
        for _ in range(3)
    ]
    fake.wait_for(lambda f: [c for c in f.of("response_url") if c.path.endswith("replayed")])
    time.sleep(1.5)
    answers = [c for c in fake.of("response_url") if c.path.endswith("replayed")]
    assert codes == [200, 409, 409]
    assert len(answers) == 1
    retried = httpx.post(f"{url}/slack/events", content=body, headers={**headers, "X-Slack-Retry-Num": "1"})
    assert retried.status_code == 200 and retried.content == b""  # Slack's own retry: acknowledged


def test_the_same_command_signed_again_is_a_new_request(slack_serve: tuple[FakeSlack, str, Path]) -> None:
    """The replay key is the signature and timestamp: the same words sent again by Slack (a new trigger_id
    and timestamp) are answered."""
    fake, url, _ = slack_serve
    for n in range(2):
        body = command_form("help", fake.response_url(f"again-{n}"))
        assert _signed_post(url, body, FORM).status_code == 200


def test_two_replicas_answer_a_request_once(tmp_path: Path) -> None:
    """The replay record is in the database: a request answered by one replica is refused by another."""
    from service.app import create_app
    from tests.service_support import live_server, offline_settings

    fake = FakeSlack()
    with fake.running():
        settings = offline_settings(
            tmp_path / "shared.sqlite3",
            agent_processes=0,
            slack_bot_token=BOT_TOKEN,
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=fake.api_url,
        )
        with live_server(create_app(settings)) as first, live_server(create_app(settings)) as second:
            body = command_form("help", fake.response_url("replicas"))
            headers = {"Content-Type": FORM, **signed_headers(body)}
            codes = [httpx.post(f"{base}/slack/events", content=body, headers=headers, timeout=30).status_code
                     for base in (first, second, first)]  # fmt: skip
    assert codes == [200, 409, 409]
