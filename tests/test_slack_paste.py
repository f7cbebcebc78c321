"""A paste in Slack: a code block (its lines kept, Slack's &lt;/&gt;/&amp; undone) and a shared text snippet,
end to end through the real app on uvicorn and the fake Slack Web API (tests/fakes/slack_api.py). The answer's
figure is the estimator's for the pasted job."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from service.slack.paste_text import message_text
from tests.fakes.slack_api import BOT_USER_ID, FakeSlack
from tests.slack_support import (
    command_form,
    direct_message,
    event_body,
    final_message,
    mention,
    post_form,
    post_json,
    shows,
    slack_service,
    total_of,
)

pytestmark = pytest.mark.slow

COMMAND = "llama-server -m models/Qwen2.5-7B-Instruct-Q4_K_M.gguf -c 16384 -ngl 99 -fa on -ctk q8_0 -ctv q8_0"
LLAMA_CPP = {
    "model": "Qwen2.5-7B-Instruct",
    "weight_dtype": "q4_k_m",
    "seq_len": 16384,
    "attention": "flash",
    "kv_dtype": "int8",
    "task": "inference",
    "engine": "llama.cpp",
    "gpu": "4090",
    "num_gpus": 1,
}


@pytest.fixture(scope="module")
def slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeSlack, str, httpx.Client]]:
    with slack_service(tmp_path_factory.mktemp("slack-paste") / "store.sqlite3") as running:
        yield running


def test_message_text_keeps_a_code_block_and_joins_a_snippet() -> None:
    event = {"text": f"<@{BOT_USER_ID}> on a 4090?\n```a: 1\nb: x &gt; y &amp; z```"}
    assert message_text(event, BOT_USER_ID) == "on a 4090?\n```a: 1\nb: x > y & z```"
    snippet = {
        "text": "will it fit?",
        "files": [{"mode": "snippet", "filetype": "yaml", "preview": "a: 1\nb: 2"}],
    }
    assert message_text(snippet, None) == "will it fit?\n```\na: 1\nb: 2\n```"
    assert (
        message_text({"text": "  llama-2-7b   on a\n4090 "}, None) == "llama-2-7b on a 4090"
    )  # no paste: one line


def test_a_code_block_in_a_mention_is_read(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    fake, base, client = slack
    event = mention(f"will this fit on one 4090?\n```{COMMAND}```", channel="C0PASTE")
    assert post_json(client, base, event_body(event)).status_code == 200
    final = final_message(fake, "C0PASTE")
    assert shows(final.body["blocks"][0]["text"], total_of(**LLAMA_CPP))


def test_a_shared_snippet_in_a_dm_is_read(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    fake, base, client = slack
    fake.reset()
    event = direct_message("on one 4090?", channel="D0PASTE")
    event["subtype"] = "file_share"
    event["files"] = [{"mode": "snippet", "filetype": "shell", "preview": COMMAND}]
    assert post_json(client, base, event_body(event)).status_code == 200
    final = final_message(fake, "D0PASTE")
    assert shows(final.body["blocks"][0]["text"], total_of(**LLAMA_CPP))
    methods = ("chat.startStream", "chat.appendStream", "chat.stopStream")
    streamed = "".join(str(c.body.get("chunks", "")) for m in methods for c in fake.of(m))  # chunks of text
    assert "Read your paste as **llama.cpp-cli**" in streamed and "`ngl`: every layer on the GPU" in streamed


def test_a_code_block_in_the_slash_command_is_read(slack: tuple[FakeSlack, str, httpx.Client]) -> None:
    fake, base, client = slack
    url = fake.response_url("cmd-paste")
    r = post_form(client, base, command_form(f"on one 4090?\n```\n{COMMAND}\n```", url, channel="C0CMDP"))
    assert r.status_code == 200
    posted = fake.wait_for(lambda f: [c for c in f.of("response_url") if c.path.endswith("cmd-paste")])
    assert shows(posted[0].body["blocks"][0]["text"], total_of(**LLAMA_CPP))
