"""A Slack answer is counted under its channel: the answer is streamed into Slack after the Slack request was
acknowledged (a task the request started), and still counts as `channel="slack"` (the Slack service of
tests/slack_support.py: a real uvicorn on loopback, the fake Slack Web API)."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.slack_support import event_body, final_message, mention, post_json, slack_service


def _answers(text: str) -> dict[tuple[str, str, str], float]:
    out: dict[tuple[str, str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "vramwise_answers_total":
                out[(s.labels["channel"], s.labels["task"], s.labels["agent"])] = s.value
    return out


def test_a_slack_answer_counts_as_the_slack_channel(tmp_path: Path) -> None:
    with slack_service(tmp_path / "slack.sqlite3") as (fake, base, client):
        before = _answers(client.get(f"{base}/metrics").text)
        r = post_json(
            client, base, event_body(mention("Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?"))
        )
        assert r.status_code == 200
        final_message(fake, "C0ROOM")
        after = _answers(client.get(f"{base}/metrics").text)
    assert after.get(("slack", "lora", "offline"), 0) - before.get(("slack", "lora", "offline"), 0) == 1
    assert not any(channel in ("web", "other") for channel, _, _ in after)
