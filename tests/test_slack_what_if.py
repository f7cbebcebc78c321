"""Slack what-if buttons (issue 29): under an answer, "QLoRA instead", "On 2 GPUs", "With checkpointing"
(Chinese under a Chinese answer); a click answers in the thread with that one change, the figure the
estimator's for the changed job. Real service on loopback, fake Slack Web API (tests/fakes/slack_api.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import parse_qs, urlencode

import httpx
import pytest

from tests.fakes.slack_api import FakeSlack
from tests.slack_support import (
    block_action_form,
    block_texts,
    event_body,
    final_message,
    mention,
    next_ts,
    post_form,
    post_json,
    shows,
    slack_service,
    total_of,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeSlack, str, httpx.Client]]:
    with slack_service(tmp_path_factory.mktemp("whatif") / "store.sqlite3") as running:
        yield running


def click(
    fake: FakeSlack,
    base: str,
    client: httpx.Client,
    button: dict,
    channel: str,
    message_ts: str,
    thread_ts: str,
) -> None:
    form = block_action_form(
        button["value"],
        channel=channel,
        message_ts=message_ts,
        thread_ts=thread_ts,
        response_url=fake.response_url("w"),
    )
    payload = json.loads(parse_qs(form)["payload"][0])
    payload["actions"][0]["action_id"] = button["action_id"]
    assert post_form(client, base, urlencode({"payload": json.dumps(payload)})).status_code == 200


def buttons_of(message) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    actions = next(b for b in message.body["blocks"] if b["type"] == "actions")
    return {e["action_id"]: e for e in actions["elements"]}


@pytest.mark.parametrize(
    ("question", "language", "labels"),
    [
        (
            "Full fine-tune Llama-2-7B on one A100 80GB, batch 2",
            "en",
            ["QLoRA instead", "On 2 GPUs", "With checkpointing"],
        ),
        (
            "在一张 A100 80GB 上全量微调 Llama-2-7B，batch 2",
            "zh",
            ["改用 QLoRA", "用 2 张卡", "开启梯度检查点"],
        ),
    ],
)
def test_a_what_if_button_answers_with_one_change_in_the_thread(
    slack, question: str, language: str, labels: list[str]
) -> None:  # type: ignore[no-untyped-def]
    fake, base, client = slack
    channel = f"C0WHATIF{language.upper()}"
    job = {"model": "llama-2-7b", "task": "full_finetune", "gpu": "a100-80gb", "batch_size": 2}
    for action_id, changed in (
        ("what_if_gpus", {"num_gpus": 2}),
        ("what_if_checkpointing", {"gradient_checkpointing": True}),
    ):
        fake.reset()
        ts = next_ts()
        post_json(client, base, event_body(mention(question, channel=channel, ts=ts)))
        answer = final_message(fake, channel)
        assert shows(block_texts(answer.body["blocks"]), total_of(**job, num_gpus=1))
        buttons = buttons_of(answer)
        assert list(buttons) == ["show_formulas", "what_if_qlora", "what_if_gpus", "what_if_checkpointing"]
        assert [buttons[k]["text"]["text"] for k in list(buttons)[1:]] == labels
        fake.reset()
        click(fake, base, client, buttons[action_id], channel, answer.body.get("ts") or ts, ts)
        reply = final_message(fake, channel)
        assert reply.body["thread_ts"] == ts
        expected = total_of(**{"num_gpus": 1, **job, **changed})
        assert expected != total_of(**job, num_gpus=1)
        assert shows(block_texts(reply.body["blocks"]), expected), (
            expected,
            block_texts(reply.body["blocks"])[:600],
        )
