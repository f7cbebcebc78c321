"""Linear-time grounding: any answer length is checked in time linear in its length, and capped.

A degenerate 80,000-character answer without sentence ends took 180 s of CPU in the sentence check
(on the thread all LLM conversations share); now the gate looks only at what each chunk added and
cuts the answer at MAX_ANSWER_CHARS, saying so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from service.agent.base import ConversationState
from service.agent.events import DoneEvent, NoticeEvent, TokenEvent
from service.agent.factory import build_agent
from service.agent.llm.agent import LLMAgent
from service.agent.llm.grounding import MAX_ANSWER_CHARS, AllowedFigures, GroundingGate
from service.settings import Settings
from tests.fakes.openai_server import FakeOpenAI, Reply

DEGENERATE = {
    "letters": "a" * 80_000,
    "digits": "7" * 80_000,
    "digits-and-spaces": "1 2 3 4 5 6 7 8 9 " * 4_445,
    "glued": "x1y2 z3," * 10_000,
    "words": "word " * 16_000,
}


@pytest.mark.parametrize("text", list(DEGENERATE.values()), ids=list(DEGENERATE))
def test_the_gate_is_linear_and_caps_the_answer(text: str) -> None:
    gate = GroundingGate(AllowedFigures())
    started = time.process_time()
    for i in range(0, len(text), 6):  # a token stream: 6 characters a chunk
        result = gate.feed(text[i : i + 6])
        assert not result.violations
        if result.capped:
            break
    gate.flush()
    assert time.process_time() - started < 3.0  # was 23-47 s for 40,000 characters of these forms
    assert gate.capped and len(gate.released) <= MAX_ANSWER_CHARS


def test_a_long_answer_is_not_capped_below_the_limit() -> None:
    gate = GroundingGate(AllowedFigures())
    text = "Weights are the largest part. " * 400  # 12,000 characters
    for i in range(0, len(text), 7):
        gate.feed(text[i : i + 7])
    gate.flush()
    assert gate.released == text and not gate.capped


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


@pytest.mark.parametrize("name", ["digits-and-spaces", "words"])
async def test_an_80k_answer_over_http_is_capped_and_said(server: FakeOpenAI, name: str) -> None:
    args = {"model": "llama-2-7b", "task": "inference", "gpu": "a100-80gb", "num_gpus": 1}

    def degenerate(body: dict[str, Any]) -> Reply:
        out = json.loads(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])
        return Reply(content=f"Total: {out['per_gpu']['total']['gib']}.\n" + DEGENERATE[name], chunk_chars=64)

    server.script = [Reply(tool_calls=[("estimate_memory", args)]), degenerate]
    settings = Settings(openai_api_key="t", openai_base_url=server.base_url, llm_model="m", llm_timeout_s=30)
    agent = build_agent(settings)
    assert isinstance(agent, LLMAgent)
    started = time.monotonic()
    events = [e async for e in agent.stream("llama-2-7b inference on one A100 80GB?", ConversationState())]
    assert time.monotonic() - started < 15.0
    notices = [e for e in events if isinstance(e, NoticeEvent)]
    assert [n.code for n in notices] == ["too_long"] and "16000 characters" in notices[0].message
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.answer.agent == "llm"
    assert done.answer.answer.startswith("Total: ") and len(done.answer.answer) <= MAX_ANSWER_CHARS
    assert "".join(e.text for e in events if isinstance(e, TokenEvent)) == done.answer.answer
