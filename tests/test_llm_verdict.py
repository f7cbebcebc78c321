"""Semantic grounding: a verdict word beside a total must match the estimator's `fits` for that total.

"fits comfortably" beside 117.17 GiB (a full fine-tune of llama-2-7b that does not fit one A100 80GB)
passed the figure check before; now it is refused with a `verdict` notice, over real HTTP against the
fake OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from service.agent.base import ConversationState
from service.agent.events import DoneEvent, NoticeEvent, TokenEvent
from service.agent.factory import build_agent
from service.agent.llm.agent import LLMAgent
from service.agent.llm.verdict_check import verdict_of
from service.settings import Settings
from tests.fakes.openai_server import FakeOpenAI, Reply

QUESTION = "How much memory to fully fine-tune llama-2-7b on one A100 80GB?"
FULL = {"model": "llama-2-7b", "task": "full_finetune", "gpu": "a100-80gb", "num_gpus": 1}


@pytest.mark.parametrize(
    ("sentence", "verdict"),
    [
        ("It fits comfortably on the card.", True),
        ("It does not fit: 117.17 GiB.", False),
        ("It won't fit on one A100.", False),
        ("Not enough memory on one card.", False),
        ("The weights take 12.55 GiB.", None),
        ("一张卡放得下。", True),
        ("一张卡放不下，显存不够。", False),
    ],
)
def test_verdict_words(sentence: str, verdict: bool | None) -> None:
    assert verdict_of(sentence) is verdict


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


def tool_output(body: dict[str, Any]) -> dict[str, Any]:
    return json.loads(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])


async def ask(server: FakeOpenAI, words: Any, question: str = QUESTION) -> list[Any]:
    server.script = [Reply(tool_calls=[("estimate_memory", FULL)]), words]
    server.requests.clear()
    settings = Settings(openai_api_key="t", openai_base_url=server.base_url, llm_model="m", llm_timeout_s=10)
    agent = build_agent(settings)
    assert isinstance(agent, LLMAgent)
    return [e async for e in agent.stream(question, ConversationState())]


@pytest.mark.parametrize(
    ("template", "question"),
    [
        ("It fits comfortably: {total} per GPU.\n", QUESTION),
        ("一张 A100 放得下，每张卡 {total}。\n", "llama-2-7b 在一张 A100 80GB 上全参数微调需要多少显存？"),
    ],
)
async def test_a_verdict_against_the_tools_is_refused(
    server: FakeOpenAI, template: str, question: str
) -> None:
    def wrong(body: dict[str, Any]) -> Reply:
        out = tool_output(body)
        assert out["verdict"]["fits"] is False and out["per_gpu"]["total"]["gib"] == "117.17 GiB"
        return Reply(content=template.format(total=out["per_gpu"]["total"]["gib"]))

    events = await ask(server, wrong, question)
    assert [e.code for e in events if isinstance(e, NoticeEvent)] == ["verdict"]
    shown = "".join(e.text for e in events if isinstance(e, TokenEvent))
    assert template.split("{total}")[0] not in shown  # the model's sentence never reached the user
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.answer.agent == "llm->offline" and "117.17 GiB" in shown


async def test_agreeing_verdicts_pass_and_a_suggestion_may_fit(server: FakeOpenAI) -> None:
    def right(body: dict[str, Any]) -> Reply:
        out = tool_output(body)
        fitting = next(s for s in out["suggestions"] if s["fits"])
        return Reply(
            content=f"It does not fit: {out['per_gpu']['total']['gib']} per GPU.\n"
            f"With {fitting['change']} it fits in {fitting['total']['gib']}.\n"
        )

    events = await ask(server, right)
    assert [e.code for e in events if isinstance(e, NoticeEvent)] == []
    assert events[-1].answer.agent == "llm" and "It does not fit: 117.17 GiB" in events[-1].answer.answer
