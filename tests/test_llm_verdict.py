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
from service.agent.llm.semantic_check import named_component, verdict_of
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


@pytest.mark.parametrize(
    ("sentence", "name"),
    [
        ("The AdamW states take 12.55 GiB.", "optimizer_states"),
        ("Weights: 12.55 GiB.", "weights"),
        ("With gradient checkpointing the activations are 11.45 GiB.", "activations"),
        ("The master weights take 25.10 GiB.", "master_weights"),
        ("优化器状态需要 50.21 GiB。", "optimizer_states"),
        ("Weights and gradients take 12.55 GiB each.", None),  # two names: not checked
    ],
)
def test_the_component_a_sentence_names(sentence: str, name: str | None) -> None:
    assert named_component(sentence) == name


@pytest.mark.parametrize(
    ("template", "code"),
    [
        ("The AdamW states take {weights}.\n", "misattributed"),  # the weights' figure
        ("优化器状态需要 {weights}。\n", "misattributed"),
        ("The AdamW states take {optimizer}.\n", None),
        ("Weights and gradients take {weights} each.\n", None),
    ],
)
async def test_a_figure_given_to_another_component_is_refused(
    server: FakeOpenAI, template: str, code: str | None
) -> None:
    def words(body: dict[str, Any]) -> Reply:
        parts = {c["name"]: c["gib"] for c in tool_output(body)["components"]}
        assert (parts["weights"], parts["optimizer_states"]) == ("12.55 GiB", "50.21 GiB")
        return Reply(content=template.format(weights=parts["weights"], optimizer=parts["optimizer_states"]))

    events = await ask(server, words)
    assert [e.code for e in events if isinstance(e, NoticeEvent)] == ([code] if code else [])
    shown = "".join(e.text for e in events if isinstance(e, TokenEvent))
    assert (template.split("{")[0] in shown) is (code is None)


async def test_no_templated_answer_of_the_question_suite_is_refused_by_the_semantic_checks() -> None:
    """The offline agent's answers (English and Chinese, every estimate of tests/parser_suite.py) name parts,
    verdicts and figures together all the time: the semantic checks must not refuse any of them."""
    from service.agent.llm.agent import allow_tool_run
    from service.agent.llm.grounding import AllowedFigures, GroundingGate
    from service.agent.llm.tools import ToolRun, estimate_view
    from service.agent.offline import OfflineAgent
    from tests.parser_suite import ESTIMATES

    agent = OfflineAgent(preload=False)
    checked = 0
    for question, _, _ in ESTIMATES:
        done = [e async for e in agent.stream(question, ConversationState())][-1]
        if not isinstance(done, DoneEvent) or done.answer.estimate is None:
            continue
        allowed = AllowedFigures()
        asked = done.answer.asked  # an inverse answer also shows its edge, the step beyond and each option
        shown = [done.answer.estimate]
        if asked is not None:
            shown += [job.estimate for job in (asked.at, asked.beyond, *asked.options) if job is not None]
        for est in shown:
            output = json.dumps(estimate_view(est))
            allow_tool_run(allowed, ToolRun(tool="estimate_memory", args={}, output=output, estimate=est))
        gate = GroundingGate(allowed, max_chars=10**6)
        result = gate.feed(done.answer.answer)
        result = result if result.violations else gate.flush()
        assert result.kind == "grounding", (question, result.blocked)
        checked += 1
    assert checked >= 300
