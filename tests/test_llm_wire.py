"""Wire variants of real OpenAI-compatible servers, over real HTTP (tests/fakes/openai_server.py).

Each reply imitates one server's dialect (service/agent/llm/wire.py): what the user sees is the
tool's answer for the asked job, and every fallback is said.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from service.agent.base import ConversationState
from service.agent.events import DoneEvent, EstimateEvent, NoticeEvent, TokenEvent
from service.agent.factory import build_agent
from service.agent.llm.agent import LLMAgent
from service.settings import Settings
from tests.fakes.openai_server import FakeOpenAI, Reply
from tools.units import fmt_gib

QUESTION = "How much memory does Llama-2-7B need to serve 4k context at batch 1 in fp16 on one A100 80GB?"
ARGS = {"model": "llama-2-7b", "task": "inference", "gpu": "a100-80gb", "num_gpus": 1, "batch_size": 1}
ARGS |= {"seq_len": 4096, "weight_dtype": "fp16"}
WEIGHTS = "12.55 GiB"  # 6,738,415,616 params x 2 B


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


async def ask(server: FakeOpenAI, *script: Any, timeout_s: float = 10.0) -> list[Any]:
    server.script = list(script)
    server.requests.clear()
    settings = Settings(
        openai_api_key="t", openai_base_url=server.base_url, llm_model="m", llm_timeout_s=timeout_s
    )
    agent = build_agent(settings)
    assert isinstance(agent, LLMAgent)
    return [e async for e in agent.stream(QUESTION, ConversationState())]


def quote(body: dict[str, Any]) -> Reply:
    out = json.loads(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])
    weights = next(c for c in out["components"] if c["name"] == "weights")
    return Reply(content=f"Weights: {weights['gib']}.\n")


def shown(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, TokenEvent))


def codes(events: list[Any]) -> list[str | None]:
    return [e.code for e in events if isinstance(e, NoticeEvent)]


def assert_tool_answer(events: list[Any]) -> None:
    (est,) = [e.estimate for e in events if isinstance(e, EstimateEvent)]
    assert est.scenario.task == "inference" and fmt_gib(est.component("weights").bytes) == WEIGHTS
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.answer.agent == "llm"
    assert done.answer.answer == shown(events) == f"Weights: {WEIGHTS}.\n"


@pytest.mark.parametrize(
    "call",
    [
        Reply(tool_calls=[("estimate_memory", ARGS)], object_arguments=True),  # Ollama
        Reply(tool_calls=[("estimate_memory", ARGS)], bare_continuation_chunks=True),  # index only first
        Reply(content=f"<tool_call>{json.dumps({'name': 'estimate_memory', 'arguments': ARGS})}</tool_call>"),
        Reply(content="<think>12 GB? maybe 99 GB</think>", tool_calls=[("estimate_memory", ARGS)]),
        Reply(tool_calls=[("estimate_memory", ARGS)], reasoning_content="Perhaps 77 GB. "),  # DeepSeek
    ],
    ids=["ollama-object-arguments", "index-only-first", "hermes-tool-call-text", "think", "reasoning"],
)
async def test_dialects_give_the_tool_answer(server: FakeOpenAI, call: Reply) -> None:
    events = await ask(server, call, quote)
    assert codes(events) == []
    assert_tool_answer(events)


async def test_think_block_in_the_answer_is_never_shown(server: FakeOpenAI) -> None:
    def thinking_quote(body: dict[str, Any]) -> Reply:
        reply = quote(body)
        return Reply(content="<think>The user wants 5 GB, I guess</think>" + reply.content, chunk_chars=3)

    events = await ask(server, Reply(tool_calls=[("estimate_memory", ARGS)]), thinking_quote)
    assert "think" not in shown(events) and "5 GB" not in shown(events)
    assert_tool_answer(events)


async def test_an_answer_cut_off_at_the_length_limit_is_said(server: FakeOpenAI) -> None:
    def cut_quote(body: dict[str, Any]) -> Reply:
        return Reply(content=quote(body).content + "The weights are the larg", finish_reason="length")

    events = await ask(server, Reply(tool_calls=[("estimate_memory", ARGS)]), cut_quote)
    assert codes(events) == ["truncated"]
    notice = next(e for e in events if isinstance(e, NoticeEvent))
    assert events[-1].answer.notices == [notice.message] and "cut off" in notice.message


async def test_429_with_retry_after_is_retried_once(server: FakeOpenAI) -> None:
    events = await ask(
        server, Reply(status=429, retry_after="1"), Reply(tool_calls=[("estimate_memory", ARGS)]), quote
    )
    assert len(server.requests) == 3 and codes(events) == []
    assert_tool_answer(events)


async def test_a_one_off_500_is_retried(server: FakeOpenAI) -> None:
    events = await ask(server, Reply(tool_calls=[("estimate_memory", ARGS)]), Reply(status=500), quote)
    assert len(server.requests) == 3 and codes(events) == []
    assert_tool_answer(events)


async def test_retry_after_past_the_deadline_is_not_waited_for(server: FakeOpenAI) -> None:
    events = await ask(server, Reply(status=429, retry_after="5"), timeout_s=2.0)
    assert len(server.requests) == 1 and codes(events) == ["llm_unavailable"]
    assert "HTTP 429" in next(e for e in events if isinstance(e, NoticeEvent)).message
    assert events[-1].answer.agent == "llm->offline" and WEIGHTS in events[-1].answer.answer


async def test_the_timeout_is_a_deadline_for_the_whole_question(server: FakeOpenAI) -> None:
    # each reply comes within the timeout, both together do not
    slow_call = Reply(tool_calls=[("estimate_memory", ARGS)], delay_s=0.7)
    events = await ask(server, slow_call, Reply(content="Weights: 12.55 GiB.\n", delay_s=0.7), timeout_s=1.0)
    notice = next(e for e in events if isinstance(e, NoticeEvent))
    assert notice.code == "llm_unavailable" and "timeout" in notice.message
    assert events[-1].answer.agent == "llm->offline" and WEIGHTS in events[-1].answer.answer


async def test_an_empty_choices_list_falls_back_and_says_so(server: FakeOpenAI) -> None:
    events = await ask(server, Reply(empty_choices=True))
    assert codes(events) == ["llm_unavailable"]
    assert "empty answer" in next(e for e in events if isinstance(e, NoticeEvent)).message
    assert events[-1].answer.agent == "llm->offline" and WEIGHTS in events[-1].answer.answer
