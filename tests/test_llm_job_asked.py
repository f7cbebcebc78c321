"""The job that was asked, over real HTTP: cut-off tool calls never run; the question's words win.

A fake OpenAI-compatible server on 127.0.0.1 (tests/fakes/openai_server.py, real uvicorn) sends a
tool call cut off by the token limit (`finish_reason: "length"`), a stream that ends inside the
arguments, unparsable JSON, and calls for another job than the one asked. LangChain's partial-JSON
parser would repair `{"model": "llama-2-7b", "ta` into `{"model": "llama-2-7b"}` and the
estimator would answer for inference (16.26 GiB) a question about full fine-tuning (117.17 GiB).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from service.agent.base import ConversationState
from service.agent.events import DoneEvent, EstimateEvent, NoticeEvent
from service.agent.factory import build_agent
from service.agent.llm.agent import LLMAgent
from service.settings import Settings
from tests.fakes.openai_server import FakeOpenAI, Reply
from tools.units import fmt_gib

QUESTION = "How much memory to fully fine-tune llama-2-7b on one A100 80GB?"
FULL = {"model": "llama-2-7b", "task": "full_finetune", "gpu": "a100-80gb", "num_gpus": 1}
CUT = json.dumps(FULL)[:30]  # '{"model": "llama-2-7b", "task"': valid after a partial-JSON repair
FULL_FINETUNE_TOTAL = "117.17 GiB"  # the estimator's figure for FULL (defaults: batch 1, seq 2048)
INFERENCE_TOTAL = "16.26 GiB"  # what the repaired call {"model": "llama-2-7b"} would answer


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


def agent_for(server: FakeOpenAI) -> LLMAgent:
    settings = Settings(openai_api_key="t", openai_base_url=server.base_url, llm_model="m", llm_timeout_s=10)
    agent = build_agent(settings)
    assert isinstance(agent, LLMAgent)
    return agent


async def ask(server: FakeOpenAI, *script: Any, question: str = QUESTION) -> list[Any]:
    server.script = list(script)
    server.requests.clear()
    return [e async for e in agent_for(server).stream(question, ConversationState())]


def quote(body: dict[str, Any]) -> Reply:
    out = json.loads(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])
    return Reply(content=f"Total per GPU: {out['per_gpu']['total']['gib']}.\n")


def estimates(events: list[Any]) -> list[Any]:
    return [e.estimate for e in events if isinstance(e, EstimateEvent)]


def notices(events: list[Any]) -> list[tuple[str | None, str]]:
    return [(e.code, e.message) for e in events if isinstance(e, NoticeEvent)]


@pytest.mark.parametrize(
    "cut_reply",
    [
        Reply(tool_calls=[("estimate_memory", CUT)], finish_reason="length"),
        Reply(tool_calls=[("estimate_memory", CUT)], end_inside_arguments=True),
        Reply(tool_calls=[("estimate_memory", "model=llama-2-7b task=full")]),  # not JSON
    ],
    ids=["finish-length", "stream-ends-inside-arguments", "unparsable"],
)
async def test_a_cut_off_call_never_runs_and_the_model_is_asked_again(
    server: FakeOpenAI, cut_reply: Reply
) -> None:
    events = await ask(server, cut_reply, Reply(tool_calls=[("estimate_memory", FULL)]), quote)
    assert len(server.requests) == 3
    retry = server.requests[1]["messages"]
    assert any(m["role"] == "tool" and "malformed or truncated" in m["content"] for m in retry)
    (est,) = estimates(events)  # the cut-off call never reached the estimator
    assert est.scenario.task == "full_finetune" and fmt_gib(est.per_gpu.total_bytes) == FULL_FINETUNE_TOTAL
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.answer.agent == "llm" and notices(events) == []
    assert done.answer.answer == f"Total per GPU: {FULL_FINETUNE_TOTAL}.\n"


async def test_cut_off_twice_the_offline_parser_answers_with_a_notice(server: FakeOpenAI) -> None:
    events = await ask(
        server,
        Reply(tool_calls=[("estimate_memory", CUT)], finish_reason="length"),
        Reply(tool_calls=[("estimate_memory", CUT)], end_inside_arguments=True),
    )
    assert len(server.requests) == 2  # asked again once, no more
    ((code, message),) = notices(events)
    assert code == "cut_off" and message == (
        "The language model's tool call was cut off before its arguments ended (it was cut off again"
        " after one more try); the offline assistant answers instead."
    )
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.answer.agent == "llm->offline"
    assert done.answer.notices == [message]
    assert done.answer.estimate.scenario.task == "full_finetune"
    assert FULL_FINETUNE_TOTAL in done.answer.answer and INFERENCE_TOTAL not in done.answer.answer


async def test_cut_off_twice_in_chinese(server: FakeOpenAI) -> None:
    question = "llama-2-7b 在一张 A100 80GB 上全参数微调需要多少显存？"
    cut = Reply(tool_calls=[("estimate_memory", CUT)], finish_reason="length")
    events = await ask(server, cut, cut, question=question)
    ((code, message),) = notices(events)
    assert code == "cut_off" and message.startswith("大模型的工具调用在参数写完之前被截断")
    assert "ToolCallCutOff" not in events[-1].answer.answer


async def test_a_call_for_another_job_is_resolved_in_favour_of_the_question(server: FakeOpenAI) -> None:
    wrong = dict(FULL, task="inference", gpu="rtx-4090")
    events = await ask(server, Reply(tool_calls=[("estimate_memory", wrong)]), quote)
    (est,) = estimates(events)
    assert (est.scenario.task, est.scenario.gpu) == ("full_finetune", "a100-80gb")
    assert fmt_gib(est.per_gpu.total_bytes) == FULL_FINETUNE_TOTAL
    said = notices(events)
    assert said == [
        (
            "overruled",
            "The language model read task as inference, but the question says full_finetune:"
            " the estimate uses full_finetune.",
        ),
        (
            "overruled",
            "The language model read gpu as rtx-4090, but the question says a100-80gb: the estimate uses a100-80gb.",
        ),
    ]
    done = events[-1]
    assert done.answer.agent == "llm" and done.answer.notices == [m for _, m in said]
    assert (
        done.answer.answer == f"Total per GPU: {FULL_FINETUNE_TOTAL}.\n"
    )  # the model quoted the corrected run


async def test_fields_the_model_left_out_come_from_the_question(server: FakeOpenAI) -> None:
    events = await ask(server, Reply(tool_calls=[("estimate_memory", {"model": "llama-2-7b"})]), quote)
    (est,) = estimates(events)
    assert (est.scenario.task, est.scenario.gpu) == ("full_finetune", "a100-80gb")
    assert [code for code, _ in notices(events)] == ["overruled"] * 2  # task, gpu (one GPU is the default)
    assert "left out task" in notices(events)[0][1]


async def test_a_comparison_keeps_the_second_gpu_the_question_names(server: FakeOpenAI) -> None:
    question = "Full fine-tune llama-2-7b: one A100 80GB or one H100?"
    calls = [("estimate_memory", dict(FULL, gpu="a100-80gb")), ("estimate_memory", dict(FULL, gpu="h100"))]
    events = await ask(
        server, Reply(tool_calls=calls), Reply(content="Both were estimated.\n"), question=question
    )
    assert sorted(e.scenario.gpu for e in estimates(events)) == ["a100-80gb", "h100"]
    assert notices(events) == []
