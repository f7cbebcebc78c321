"""The LLM agent over real HTTP: ChatOpenAI against a fake OpenAI-compatible server on 127.0.0.1.

The server (tests/fakes/openai_server.py, real uvicorn) streams `chat.completion.chunk` SSE with
tool-call deltas and content deltas and `[DONE]`; the agent is built by `build_agent(settings)`
exactly as the service builds it (fresh HTTP clients, max_retries=0), so this is the code path of
a real OpenAI / DeepSeek / DashScope / vLLM / Ollama endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from service.agent.base import ConversationState
from service.agent.events import DoneEvent, EstimateEvent, NoticeEvent, ScenarioEvent, TokenEvent
from service.agent.factory import build_agent
from service.agent.llm.agent import LLMAgent
from service.settings import Settings
from tests.fakes.openai_server import FakeOpenAI, Reply, refused_base_url

LLAMA2_7B_FP16_WEIGHTS = 13_476_831_232  # 6,738,415,616 params x 2 B
ARGS = {
    "model": "llama-2-7b",
    "task": "inference",
    "gpu": "a100-80gb",
    "num_gpus": 1,
    "batch_size": 1,
    "seq_len": 4096,
    "weight_dtype": "fp16",
}
QUESTION = "How much memory does Llama-2-7B need to serve 4k context at batch 1 in fp16 on one A100 80GB?"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


def agent_for(base_url: str, *, timeout_s: float = 10.0) -> LLMAgent:
    settings = Settings(
        openai_api_key="test", openai_base_url=base_url, llm_model="fake-model", llm_timeout_s=timeout_s
    )
    agent = build_agent(settings)
    assert isinstance(agent, LLMAgent)
    return agent


def use(server: FakeOpenAI, *script: Any) -> None:
    server.script = list(script)
    server.requests.clear()


async def collect(agent: LLMAgent, question: str = QUESTION) -> list[Any]:
    return [e async for e in agent.stream(question, ConversationState())]


def tool_output(body: dict[str, Any]) -> dict[str, Any]:
    return json.loads(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])


def honest(body: dict[str, Any]) -> Reply:
    out = tool_output(body)
    weights = next(c for c in out["components"] if c["name"] == "weights")
    return Reply(
        content=(
            f"It {'fits' if out['verdict']['fits'] else 'does not fit'} on one {out['gpu']['name']}.\n"
            f"- Weights: {weights['gib']} ({weights['substituted']}; {weights['source']}).\n"
            f"- Total per GPU: {out['per_gpu']['total']['gib']}.\n"
        )
    )


async def test_end_to_end_over_http(server: FakeOpenAI) -> None:
    use(server, Reply(tool_calls=[("estimate_memory", ARGS)]), honest)
    events = await collect(agent_for(server.base_url))

    # request 1: streamed, with the tools and their JSON schemas, the system prompt first
    first = server.requests[0]
    assert first["stream"] is True and first["model"] == "fake-model"
    names = {t["function"]["name"] for t in first["tools"]}
    assert names == {"estimate_memory", "plan_fit", "lookup_model", "list_gpus"}
    schema = next(t for t in first["tools"] if t["function"]["name"] == "estimate_memory")["function"]
    assert {"model", "task", "gpu", "num_gpus", "follow_up"} <= set(schema["parameters"]["properties"])
    assert first["messages"][0]["role"] == "system" and first["messages"][-1]["content"] == QUESTION
    # request 2 carries the tool's result for the streamed tool call
    tool_msgs = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and json.loads(tool_msgs[0]["content"])["scenario"]["model"] == "llama-2-7b"

    scenario = next(e for e in events if isinstance(e, ScenarioEvent)).scenario
    assert (scenario.model, scenario.seq_len, scenario.weight_dtype) == ("llama-2-7b", 4096, "fp16")
    est = next(e for e in events if isinstance(e, EstimateEvent)).estimate
    assert est.component("weights").bytes == LLAMA2_7B_FP16_WEIGHTS
    answer = events[-1].answer
    assert isinstance(events[-1], DoneEvent) and answer.agent == "llm"
    assert "- Weights: 12.55 GiB (" in answer.answer
    streamed = [e.text for e in events if isinstance(e, TokenEvent)]
    assert len(streamed) >= 3 and "".join(streamed) == answer.answer


async def test_invented_figure_over_http_is_replaced(server: FakeOpenAI) -> None:
    use(server, Reply(tool_calls=[("estimate_memory", ARGS)]), Reply(content="It needs 19.99 GiB per GPU.\n"))
    events = await collect(agent_for(server.base_url))
    assert "19.99" not in "".join(e.text for e in events if isinstance(e, TokenEvent))
    assert [e.code for e in events if isinstance(e, NoticeEvent)] == ["grounding"]
    assert events[-1].answer.agent == "llm->offline" and "19.99" not in events[-1].answer.answer


@pytest.mark.parametrize(
    ("reply", "reason", "tries"),
    [
        (Reply(status=500), "HTTP 500", 2),
        (Reply(status=429), "HTTP 429", 1),  # no Retry-After: no retry
        (Reply(status=503), "HTTP 503", 2),
    ],
)
async def test_http_errors_fall_back_to_offline(
    server: FakeOpenAI, reply: Reply, reason: str, tries: int
) -> None:
    use(server, reply, reply)
    events = await collect(agent_for(server.base_url))
    assert len(server.requests) == tries  # one retry on a 5xx, no retry storm against a failing endpoint
    assert_offline_fallback(events, reason)


async def test_error_after_text_and_a_tool_call_falls_back(server: FakeOpenAI) -> None:
    intro = "Let me run the estimator for that. "
    use(server, Reply(content=intro, tool_calls=[("estimate_memory", ARGS)]), Reply(status=500))
    events = await collect(agent_for(server.base_url))
    assert_offline_fallback(events, "HTTP 500")
    # what the user already saw stays, then the offline answer follows it
    answer = events[-1].answer.answer
    assert answer.startswith(intro) and "\n---\n" in answer
    assert "".join(e.text for e in events if isinstance(e, TokenEvent)) == answer


async def test_timeout_falls_back_to_offline(server: FakeOpenAI) -> None:
    use(server, Reply(content="too late", delay_s=3.0))
    events = await collect(agent_for(server.base_url, timeout_s=0.5))
    assert_offline_fallback(events, "timeout")


async def test_stalled_stream_falls_back_to_offline(server: FakeOpenAI) -> None:
    use(server, Reply(content="Llama-2-7B needs a lot of memory", stall_after_s=3.0))
    events = await collect(agent_for(server.base_url, timeout_s=0.5))
    assert_offline_fallback(events, "timeout")


async def test_connection_refused_falls_back_to_offline() -> None:
    events = await collect(agent_for(refused_base_url()))
    assert_offline_fallback(events, "connection failed")


def assert_offline_fallback(events: list[Any], reason: str) -> None:
    notices = [e for e in events if isinstance(e, NoticeEvent)]
    assert [n.code for n in notices] == ["llm_unavailable"]
    assert reason in notices[0].message
    answer = events[-1].answer
    assert isinstance(events[-1], DoneEvent)
    assert answer.agent == "llm->offline" and answer.question == QUESTION
    # the offline agent answered the same question with the estimator's numbers
    assert answer.estimate is not None
    assert answer.estimate.component("weights").bytes == LLAMA2_7B_FP16_WEIGHTS
    assert "12.55 GiB" in answer.answer


async def test_chinese_question_falls_back_with_a_chinese_notice(server: FakeOpenAI) -> None:
    use(server, Reply(status=500))
    question = "Llama-2-7B 用一张 A100 80G 做推理，4k 上下文，fp16，batch 1，需要多少显存？"
    events = await collect(agent_for(server.base_url), question)
    notice = next(e for e in events if isinstance(e, NoticeEvent))
    assert notice.code == "llm_unavailable" and "离线助手" in notice.message
    answer = events[-1].answer
    assert answer.language == "zh" and answer.agent == "llm->offline"
    assert answer.estimate.component("weights").bytes == LLAMA2_7B_FP16_WEIGHTS
    assert "12.55 GiB" in answer.answer


def test_one_agent_serves_requests_on_different_event_loops(server: FakeOpenAI) -> None:
    """The service builds the agent once; each request gets fresh HTTP clients (STACK.md trap)."""
    import asyncio

    agent = agent_for(server.base_url)
    for _ in range(2):
        use(server, Reply(tool_calls=[("estimate_memory", ARGS)]), honest)
        events = asyncio.run(collect(agent))
        assert events[-1].answer.agent == "llm", [e for e in events if isinstance(e, NoticeEvent)]


def honest_zh(body: dict[str, Any]) -> Reply:
    out = tool_output(body)
    verdict = "放得下" if out["verdict"]["fits"] else "放不下"
    return Reply(content=f"结论：{verdict}。每张卡需要 {out['per_gpu']['total']['gib']}。\n")


async def test_chinese_multi_turn_over_http(server: FakeOpenAI) -> None:
    first_args = {"model": "qwen2.5-7b", "task": "lora", "gpu": "4090", "num_gpus": 1, "lora_rank": 16}
    agent = agent_for(server.base_url)
    state = ConversationState(conversation_id="zh-1")

    use(server, Reply(tool_calls=[("estimate_memory", first_args)]), honest_zh)
    q1 = "Qwen2.5-7B 用 LoRA（rank 16）在一张 4090 上微调，显存够吗？"
    first = [e async for e in agent.stream(q1, state)][-1].answer
    assert first.language == "zh" and first.agent == "llm" and first.answer.startswith("结论：")
    assert "数字只能来自工具" in server.requests[0]["messages"][0]["content"]  # Chinese system prompt
    state.record_turn(q1, first)

    use(server, Reply(tool_calls=[("estimate_memory", {"follow_up": True, "task": "qlora"})]), honest_zh)
    q2 = "那如果用 QLoRA 呢？"
    events = [e async for e in agent.stream(q2, state)]
    second = events[-1].answer
    sent = server.requests[0]["messages"]
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "user"]  # the previous turn, then q2
    assert sent[2]["content"] == first.answer and sent[-1]["content"] == q2
    assert '"lora_rank": 16' in sent[0]["content"]  # the previous scenario as context
    s = second.scenario
    assert (s.model, s.task, s.gpu, s.lora_rank) == ("qwen2.5-7b", "qlora", "4090", 16)
    assert second.agent == "llm" and second.language == "zh" and second.conversation_id == "zh-1"
    assert second.estimate.per_gpu.total_bytes < first.estimate.per_gpu.total_bytes  # 4-bit base


async def test_conceptual_answer_without_figures_needs_no_tool(server: FakeOpenAI) -> None:
    use(
        server,
        Reply(content="No. Epochs change how long training runs, not what one step holds in memory.\n"),
    )
    events = await collect(agent_for(server.base_url), "Does num_epochs change GPU memory?")
    answer = events[-1].answer
    assert answer.agent == "llm" and answer.estimate is None and answer.scenario is None
    assert not [e for e in events if isinstance(e, NoticeEvent)]
