"""Cost: the first request of a question is at most 12,000 characters (it was 33,093: two tools with
identical 13.4k-character schemas), the history resent is capped, and a question takes two round trips
(the tool call, then the words). Real HTTP against the fake OpenAI-compatible server on 127.0.0.1;
benchmarks/llm_request_size.py prints the same figures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from service.agent.base import ConversationState, Turn
from service.agent.factory import build_agent
from service.agent.llm.agent import LLMAgent
from service.settings import Settings
from tests.fakes.openai_server import FakeOpenAI, Reply

FIRST_REQUEST_MAX_CHARS = 12_000
ARGS = {"model": "llama-2-7b", "task": "full_finetune", "gpu": "a100-80gb", "num_gpus": 1}
QUESTION = "How much memory to fully fine-tune llama-2-7b on one A100 80GB?"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


def quote(body: dict[str, Any]) -> Reply:
    out = json.loads(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])
    return Reply(content=f"Total per GPU: {out['per_gpu']['total']['gib']}.\n")


async def ask(server: FakeOpenAI, state: ConversationState) -> Any:
    server.script = [Reply(tool_calls=[("estimate_memory", ARGS)]), quote]
    server.requests.clear()
    settings = Settings(openai_api_key="t", openai_base_url=server.base_url, llm_model="m", llm_timeout_s=10)
    agent = build_agent(settings)
    assert isinstance(agent, LLMAgent)
    return [e async for e in agent.stream(QUESTION, state)][-1]


async def test_the_first_request_is_small_and_a_question_takes_two_round_trips(server: FakeOpenAI) -> None:
    done = await ask(server, ConversationState())
    assert done.answer.agent == "llm" and len(server.requests) == 2
    first = server.requests[0]
    assert len(json.dumps(first, ensure_ascii=False)) <= FIRST_REQUEST_MAX_CHARS
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert "architecture" not in tools["estimate_memory"]["parameters"]["properties"]  # by HF repo id
    assert tools["estimate_memory"]["parameters"]["properties"]["optimizer"]["description"].startswith(
        "one of: "
    )
    assert tools["plan_fit"]["parameters"].get("properties") in (None, {})  # "the same as estimate_memory's"


async def test_a_long_history_is_capped(server: FakeOpenAI) -> None:
    long_answer = "A long breakdown line with many words in it. " * 200  # 9,200 characters
    turns = [
        Turn(role="user" if i % 2 == 0 else "assistant", content=f"turn {i}: " + long_answer)
        for i in range(20)
    ]
    done = await ask(server, ConversationState(turns=turns))
    assert done.answer.agent == "llm"
    sent = server.requests[0]["messages"]
    assert len(sent) == 1 + 4 + 1  # the system prompt, the last 2 exchanges, the question
    assert sent[1]["content"].startswith("turn 16: ") and all(len(m["content"]) <= 410 for m in sent[1:-1])
    assert len(json.dumps(server.requests[0], ensure_ascii=False)) <= FIRST_REQUEST_MAX_CHARS
