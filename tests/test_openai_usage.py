"""The OpenAI-compatible `usage`, filled and honest (issue 29): counts of Unicode characters of the messages
sent and of the answer, with `unit: "characters"`; read by the official SDK, streaming (with
`stream_options.include_usage`) and not."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from service.app import create_app
from tests.service_support import live_server, offline_settings, reset_sse_exit_flag

__all__ = ["reset_sse_exit_flag"]  # autouse fixture

QUESTION = "Llama-2-7B 在一张 4090 上推理，batch 1，上下文 4096，放得下吗？"
SYSTEM = "You are helpful."


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    db = tmp_path_factory.mktemp("usage") / "conversations.sqlite3"
    with (
        live_server(create_app(offline_settings(db))) as url,
        openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60) as c,
    ):
        yield c


def messages() -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]


def test_usage_counts_characters_and_says_so(client: openai.OpenAI) -> None:
    done = client.chat.completions.create(model="vramwise", messages=messages())
    answer = done.choices[0].message.content
    assert done.usage is not None
    assert (
        done.usage.prompt_tokens == len(SYSTEM) + len(QUESTION) == 16 + 46
    )  # code points, not UTF-8 bytes (80)
    assert done.usage.completion_tokens == len(answer) > 100
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens
    assert done.usage.model_extra == {"unit": "characters"}


def test_streamed_usage_comes_last_when_asked(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="vramwise", messages=messages(), stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert last.usage.completion_tokens == len(text) > 100
    assert last.usage.prompt_tokens == len(SYSTEM) + len(QUESTION)
    assert all(c.usage is None for c in chunks[:-1])
    plain = list(client.chat.completions.create(model="vramwise", messages=messages(), stream=True))
    assert all(c.usage is None for c in plain)  # not asked: OpenAI's default, no usage chunk
