"""With an LLM configured, the realistic-question suite through the real LangChain agent yields the same tool call.

For every question of tests/parser_suite.py that the offline agent estimates, a scripted fake model calls
`estimate_memory` with the fields the offline parser read (what a well-behaved LLM sends) and then quotes
the tool's output. The call goes through the real LLMAgent (create_agent, the ToolNode, the tool, the
estimator, the grounding gate): the ScenarioEvent must carry exactly those fields, the estimate must be the
offline agent's for the same question, and the answer's summary must be the one the offline agent shows.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from service.agent.asked_text import asked_lines
from service.agent.base import ConversationState
from service.agent.events import DoneEvent, ScenarioEvent
from service.agent.factory import build_agent
from service.agent.llm.agent import LLMAgent
from service.agent.offline import OfflineAgent
from service.agent.offline.parser import parse_question
from service.agent.paste.split import split_message
from service.agent.summary import summary_lines, summary_text
from service.settings import Settings
from tests.fakes.chat_model import Step, call, last_tool_output, say, scripted
from tests.parser_suite import ESTIMATES


def _quote(messages: list[BaseMessage]) -> Step:
    out = last_tool_output(messages)
    return say(f"Total per GPU: {out['per_gpu']['total']['gib']}.\n")


async def _events(agent: Any, question: str) -> list[Any]:
    return [e async for e in agent.stream(question, ConversationState())]


@pytest.mark.parametrize(("question", "expected", "asks"), ESTIMATES, ids=[q[:60] for q, _, _ in ESTIMATES])
async def test_llm_agent_sends_the_offline_fields(
    question: str, expected: dict[str, Any], asks: str | None
) -> None:
    offline = (await _events(OfflineAgent(preload=False), question))[-1]
    if not isinstance(offline, DoneEvent):  # refused with a clear error offline: the tool refuses it too
        return
    parsed = parse_question(question)
    model = scripted(call("estimate_memory", parsed.scenario, text="Running the estimator. "), _quote)
    agent = build_agent(Settings(openai_api_key=None, openai_base_url=None, agent="auto"), chat_model=model)
    assert isinstance(agent, LLMAgent)
    events = await _events(agent, question)
    if split_message(question) is not None:  # a pasted command line: read by its parser, never by the model
        done = events[-1]
        assert (
            isinstance(done, DoneEvent) and done.answer.agent == "offline" and done.answer.source is not None
        )
        assert done.answer.model_dump() == {**offline.answer.model_dump(), "conversation_id": None}
        return
    scenario = next(e for e in events if isinstance(e, ScenarioEvent)).scenario
    assert scenario.stated() == offline.answer.scenario.stated()  # the tool received exactly those fields
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.answer.agent == "llm"
    assert done.answer.estimate is not None and offline.answer.estimate is not None
    assert done.answer.estimate.per_gpu.total_bytes == offline.answer.estimate.per_gpu.total_bytes
    # an inverse question or comparison: the same search and the same first line as offline
    assert (done.answer.asked is None) == (offline.answer.asked is None)
    lead = asked_lines(done.answer.asked, done.answer.language)[0] if done.answer.asked else None
    shown = summary_lines(done.answer.estimate, done.answer.language, asks, lead=lead)
    assert done.answer.summary == "\n".join(shown)
    if lead is None:
        assert done.answer.summary == summary_text(done.answer.estimate, done.answer.language, asks)
    assert done.answer.summary == offline.answer.summary
