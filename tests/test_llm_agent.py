"""The LLM agent with a scripted fake chat model: real create_agent, real tools, real estimator.

The fake only decides what the "LLM" says and which tool it calls with which JSON; parsing of
the streamed tool-call chunks, the ToolNode, argument validation, the estimator, grounding and
fallback all run for real. Scripts that write an answer quote the figures from the tool output
the fake model actually received, like a well-behaved LLM would.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from service.agent.base import ConversationState
from service.agent.events import DoneEvent, EstimateEvent, NoticeEvent, ScenarioEvent, TokenEvent
from service.agent.factory import build_agent
from service.agent.llm.agent import LLMAgent
from service.agent.llm.tools import ToolRecorder, build_tools
from service.settings import Settings
from tests.fakes.chat_model import ScriptedChatModel, Step, call, call_raw, last_tool_output, say, scripted
from tools.estimator import estimate
from tools.scenario import Scenario

LLAMA2_7B_PARAMS = 6_738_415_616  # published (meta-llama/Llama-2-7b-hf safetensors)
LLAMA2_7B_FP16_WEIGHTS = 2 * LLAMA2_7B_PARAMS  # 13,476,831,232 B = 12.55 GiB

SERVE_ARGS = {
    "model": "llama-2-7b",
    "task": "inference",
    "gpu": "a100-80gb",
    "num_gpus": 1,
    "batch_size": 1,
    "seq_len": 4096,
    "weight_dtype": "fp16",
}
SERVE_QUESTION = (
    "How much memory does Llama-2-7B need to serve 4k context at batch 1 in fp16 on one A100 80GB?"
)


def offline_settings() -> Settings:
    return Settings(openai_api_key=None, openai_base_url=None, agent="auto")


def llm_agent(model: ScriptedChatModel) -> LLMAgent:
    agent = build_agent(offline_settings(), chat_model=model)
    assert isinstance(agent, LLMAgent)
    return agent


async def collect(agent: Any, question: str, state: ConversationState | None = None) -> list[Any]:
    return [e async for e in agent.stream(question, state or ConversationState())]


def tokens(events: list[Any]) -> list[str]:
    return [e.text for e in events if isinstance(e, TokenEvent)]


def done(events: list[Any]) -> DoneEvent:
    assert isinstance(events[-1], DoneEvent), events[-1]
    return events[-1]


def quote_answer(messages: list[BaseMessage]) -> Step:
    """An honest LLM: explains each component with the tool's own figures and formulas."""
    out = last_tool_output(messages)
    lines = [f"Verdict: {'fits' if out['verdict']['fits'] else 'does not fit'} on {out['gpu']['name']}."]
    for c in out["components"]:
        lines.append(f"- {c['label']}: {c['gib']} ({c['substituted']}; source: {c['source']}).")
    lines.append(f"Total per GPU: {out['per_gpu']['total']['gib']}.")
    return say("\n".join(lines) + "\n")


def quote_answer_zh(messages: list[BaseMessage]) -> Step:
    out = last_tool_output(messages)
    verdict = "放得下" if out["verdict"]["fits"] else "放不下"
    lines = [f"结论：{verdict}，每张卡需要 {out['per_gpu']['total']['gib']}。"]
    lines += [f"- {c['label']}：{c['gib']}（{c['substituted']}）。" for c in out["components"]]
    return say("\n".join(lines) + "\n")


# ---- the tool path ------------------------------------------------------------------------------


async def test_tool_gets_parsed_arguments_and_events_carry_its_numbers() -> None:
    model = scripted(call("estimate_memory", SERVE_ARGS, text="Let me run the estimator. "), quote_answer)
    events = await collect(llm_agent(model), SERVE_QUESTION)

    scenario_ev = next(e for e in events if isinstance(e, ScenarioEvent))
    estimate_ev = next(e for e in events if isinstance(e, EstimateEvent))
    # the tool received the parsed JSON arguments
    for key, value in SERVE_ARGS.items():
        assert getattr(scenario_ev.scenario, key) == value
    # the estimate event carries exactly what the estimator computes for those arguments
    direct = estimate(Scenario(**SERVE_ARGS), plan=True)
    assert estimate_ev.estimate.per_gpu.total_bytes == direct.per_gpu.total_bytes
    weights = estimate_ev.estimate.component("weights")
    assert weights is not None and weights.bytes == LLAMA2_7B_FP16_WEIGHTS
    # the model saw the tool's figures, and the answer quotes them
    tool_json = last_tool_output(model.calls[-1])
    assert {"bytes": LLAMA2_7B_FP16_WEIGHTS, "gib": "12.55 GiB"}.items() <= next(
        c for c in tool_json["components"] if c["name"] == "weights"
    ).items()
    answer = done(events).answer
    assert answer.agent == "llm"
    assert "12.55 GiB" in answer.answer
    assert answer.estimate is not None and answer.estimate.per_gpu.total_bytes == direct.per_gpu.total_bytes
    assert (
        answer.scenario == scenario_ev.scenario == Scenario(**SERVE_ARGS)
    )  # the stated scenario, as offline keeps it
    # streamed incrementally: many token events, in order, adding up to the answer
    streamed = tokens(events)
    assert len(streamed) >= 4
    assert "".join(streamed) == answer.answer
    assert events.index(estimate_ev) < max(i for i, e in enumerate(events) if isinstance(e, TokenEvent))
    # the system prompt (from prompts/en) and the tools reached the model
    assert "estimate_memory" in str(model.calls[0][0].content)
    assert {t.name for t in model.bound_tools} >= {"estimate_memory", "lookup_model", "list_gpus", "plan_fit"}


async def test_invented_figure_is_caught_before_the_user_sees_it(caplog: pytest.LogCaptureFixture) -> None:
    def liar(messages: list[BaseMessage]) -> Step:
        out = last_tool_output(messages)
        weights = next(c for c in out["components"] if c["name"] == "weights")
        return say(
            f"The weights take {weights['gib']}. The KV cache needs 37.25 GiB for this. "
            f"Total per GPU: {out['per_gpu']['total']['gib']}.\n"
        )

    model = scripted(call("estimate_memory", SERVE_ARGS), liar)
    with caplog.at_level(logging.WARNING, logger="vramwise.grounding"):
        events = await collect(llm_agent(model), SERVE_QUESTION)

    shown = "".join(tokens(events))
    assert "37.25" not in shown  # never reached the user
    assert "The weights take 12.55 GiB. " in shown  # the checked sentence before it did
    notice = next(e for e in events if isinstance(e, NoticeEvent))
    assert notice.code == "grounding" and "37.25 GiB" in notice.message
    answer = done(events).answer
    assert answer.agent == "llm->offline"
    assert "37.25" not in answer.answer
    assert answer.answer == shown
    # the rest is the templated explanation of the tool's estimate
    from service.agent.render import render_answer

    assert render_answer(answer.estimate, "en") in answer.answer
    assert any("37.25 GiB" in r.getMessage() for r in caplog.records if r.name == "vramwise.grounding")


async def test_figures_without_any_tool_call_fall_back_to_the_offline_agent() -> None:
    model = scripted(say("Llama-2-7B needs about 28 GB to serve. That is all.\n"))
    events = await collect(llm_agent(model), SERVE_QUESTION)
    assert "28 GB" not in "".join(tokens(events))
    assert next(e for e in events if isinstance(e, NoticeEvent)).code == "grounding"
    answer = done(events).answer
    assert answer.agent == "llm->offline"
    assert answer.estimate is not None  # the offline agent parsed the question and ran the tool
    assert answer.estimate.component("weights").bytes == LLAMA2_7B_FP16_WEIGHTS


async def test_bad_arguments_get_an_error_the_model_can_fix() -> None:
    bad = dict(SERVE_ARGS, batch_size="eight")
    model = scripted(call("estimate_memory", bad), call("estimate_memory", SERVE_ARGS), quote_answer)
    events = await collect(llm_agent(model), SERVE_QUESTION)
    error_seen = [m for m in model.calls[1] if m.type == "tool"][-1]
    assert "batch_size" in str(error_seen.content)
    assert getattr(error_seen, "status", None) == "error"
    assert done(events).answer.agent == "llm"
    assert len([e for e in events if isinstance(e, EstimateEvent)]) == 1


async def test_unknown_model_name_returns_near_names() -> None:
    model = scripted(
        call("estimate_memory", dict(SERVE_ARGS, model="llama-2-7bb")),
        call("estimate_memory", SERVE_ARGS),
        quote_answer,
    )
    # the question names no model the parser reads literally (a name the question states would win)
    events = await collect(llm_agent(model), SERVE_QUESTION.replace("Llama-2-7B", "the Llama two 7bb model"))
    error_seen = [m for m in model.calls[1] if m.type == "tool"][-1]
    assert "llama-2-7b" in str(error_seen.content) and "ERROR" in str(error_seen.content)
    assert done(events).answer.agent == "llm"


async def test_unparsable_tool_json_is_retried() -> None:
    model = scripted(
        call_raw("estimate_memory", "model=llama-2-7b task=inference"),
        call("estimate_memory", SERVE_ARGS),
        quote_answer,
    )
    events = await collect(llm_agent(model), SERVE_QUESTION)
    assert "malformed" in str([m for m in model.calls[1] if m.type == "tool"][-1].content)
    assert done(events).answer.agent == "llm"


async def test_arguments_the_model_cannot_fix_fall_back_to_offline() -> None:
    bad = dict(SERVE_ARGS, batch_size="eight")
    model = scripted(
        call("estimate_memory", bad),
        call_raw("estimate_memory", "not json"),
        call("estimate_memory", dict(SERVE_ARGS, gpus=1)),
        quote_answer,
    )
    events = await collect(llm_agent(model), SERVE_QUESTION)
    assert len(model.calls) == 3  # gave up after the first try and 2 corrections
    notice = next(e for e in events if isinstance(e, NoticeEvent))
    assert notice.code == "llm_unavailable"
    answer = done(events).answer
    assert answer.agent == "llm->offline"
    assert answer.question == SERVE_QUESTION
    assert (
        answer.estimate is not None and answer.estimate.component("weights").bytes == LLAMA2_7B_FP16_WEIGHTS
    )


async def test_endpoint_error_falls_back_to_offline() -> None:
    model = scripted(ConnectionError("endpoint down"))
    events = await collect(llm_agent(model), SERVE_QUESTION)
    assert [e.code for e in events if isinstance(e, NoticeEvent)] == ["llm_unavailable"]
    answer = done(events).answer
    assert answer.agent == "llm->offline"
    assert answer.answer and answer.estimate is not None


# ---- follow-ups over the LLM path ---------------------------------------------------------------


async def test_follow_up_in_english_modifies_the_previous_scenario() -> None:
    first_args = {
        "model": "llama-2-7b",
        "task": "full_finetune",
        "gpu": "a100-80gb",
        "num_gpus": 1,
        "batch_size": 4,
        "seq_len": 2048,
    }

    def follow_up(messages: list[BaseMessage]) -> Step:
        system = str(messages[0].content)
        assert '"task": "full_finetune"' in system  # the previous scenario is in the context
        assert [m.type for m in messages[1:3]] == ["human", "ai"]  # and so is the previous turn
        return call("estimate_memory", {"follow_up": True, "task": "lora", "lora_rank": 16})

    model = scripted(call("estimate_memory", first_args), quote_answer, follow_up, quote_answer)
    agent = llm_agent(model)
    state = ConversationState(conversation_id="c1")
    first = done(
        await collect(agent, "Full fine-tune Llama-2-7B on one A100 80GB, batch 4, 2048 tokens?", state)
    )
    state.record_turn("Full fine-tune Llama-2-7B on one A100 80GB, batch 4, 2048 tokens?", first.answer)

    events = await collect(agent, "What about with LoRA?", state)
    second = done(events).answer
    assert second.agent == "llm" and second.language == "en" and second.conversation_id == "c1"
    s = second.scenario
    assert s is not None
    assert (s.model, s.gpu, s.batch_size, s.seq_len, s.task, s.lora_rank) == (
        "llama-2-7b",
        "a100-80gb",
        4,
        2048,
        "lora",
        16,
    )
    assert second.estimate.per_gpu.total_bytes < first.answer.estimate.per_gpu.total_bytes
    assert (
        second.estimate.per_gpu.total_bytes
        == estimate(Scenario(**first_args).merged(task="lora", lora_rank=16), plan=True).per_gpu.total_bytes
    )


async def test_follow_up_in_chinese_modifies_the_previous_scenario() -> None:
    first_args = {"model": "qwen2.5-7b", "task": "full_finetune", "gpu": "a100-80gb", "num_gpus": 1}

    def follow_up(messages: list[BaseMessage]) -> Step:
        assert "数字只能来自工具" in str(messages[0].content)  # the Chinese system prompt
        assert "上一个场景" in str(messages[0].content)
        return call("estimate_memory", {"follow_up": True, "num_gpus": 2, "zero_stage": 3})

    model = scripted(call("estimate_memory", first_args), quote_answer_zh, follow_up, quote_answer_zh)
    agent = llm_agent(model)
    state = ConversationState()
    q1 = "Qwen2.5-7B 全参微调，一张 A100 80G 够吗？"
    first = done(await collect(agent, q1, state)).answer
    assert first.language == "zh" and first.answer.startswith("结论：")
    state.record_turn(q1, first)

    events = await collect(agent, "那如果用两张卡呢？", state)
    second = done(events).answer
    assert second.language == "zh" and second.agent == "llm"
    assert (
        second.scenario.model,
        second.scenario.task,
        second.scenario.num_gpus,
        second.scenario.zero_stage,
    ) == ("qwen2.5-7b", "full_finetune", 2, 3)
    assert second.estimate.per_gpu.total_bytes < first.estimate.per_gpu.total_bytes
    assert "每张卡需要" in second.answer


# ---- the other tools, called directly -----------------------------------------------------------


async def test_lookup_model_list_gpus_and_plan_fit() -> None:
    recorder = ToolRecorder()
    tools = {t.name: t for t in build_tools(recorder)}

    looked_up = await tools["lookup_model"].ainvoke({"name": "Llama-2-7B"})
    assert '"params":6738415616' in looked_up

    unknown = await tools["lookup_model"].ainvoke({"name": "lama-2-7b-xyz"})
    assert unknown.startswith("ERROR") and "Did you mean" in unknown

    gpus = await tools["list_gpus"].ainvoke({})
    assert "a100-80gb" in gpus and "GiB" in gpus

    plan = await tools["plan_fit"].ainvoke(
        {"model": "llama-2-7b", "task": "full_finetune", "gpu": "4090", "num_gpus": 1}
    )
    assert '"fits":false' in plan and '"changes_that_fit":[{' in plan
    assert recorder.estimates and not recorder.estimates[-1].fits


# ---- the factory --------------------------------------------------------------------------------


def test_factory_picks_the_brain() -> None:
    from service.agent.offline import OfflineAgent

    assert isinstance(build_agent(offline_settings()), OfflineAgent)
    configured = Settings(openai_api_key="sk-test", openai_base_url="http://127.0.0.1:9/v1")
    assert isinstance(build_agent(configured), LLMAgent)
    assert isinstance(build_agent(configured, force_offline=True), OfflineAgent)
    assert isinstance(build_agent(configured.model_copy(update={"agent": "offline"})), OfflineAgent)
    assert isinstance(build_agent(offline_settings(), chat_model=scripted()), LLMAgent)
    assert build_agent(configured).name == "llm"
