"""Multi-turn conversations through the real OfflineAgent and a ConversationState, in both languages.

Each follow-up must change exactly what it says, keep the rest of the previous scenario, and
produce the estimator's figures for the merged scenario.
"""

from __future__ import annotations

import asyncio
from typing import Any

from service.agent.base import ConversationState
from service.agent.events import Answer, DoneEvent, ErrorEvent
from service.agent.offline import OfflineAgent
from tests.answer_support import ask
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import fmt_gib


class Conversation:
    """A user talking to the offline agent; the state is recorded after each turn, as the service does."""

    def __init__(self) -> None:
        self.agent = OfflineAgent()
        self.state = ConversationState(conversation_id="test-conv")

    def ask(self, question: str) -> Answer:
        async def run() -> list[Any]:
            return [e async for e in self.agent.stream(question, self.state)]

        events = asyncio.run(run())
        last = events[-1]
        assert not isinstance(last, ErrorEvent), last.message
        assert isinstance(last, DoneEvent)
        self.state.record_turn(question, last.answer)
        return last.answer


def stated(answer: Answer) -> dict[str, Any]:
    assert answer.scenario is not None
    return answer.scenario.stated()


def assert_tool_figures(answer: Answer) -> None:
    assert answer.estimate is not None and answer.scenario is not None
    reference = estimate(Scenario.model_validate(stated(answer)), plan=False)
    assert answer.estimate.per_gpu.total_bytes == reference.per_gpu.total_bytes
    assert fmt_gib(reference.per_gpu.total_bytes) in answer.answer


def test_english_conversation() -> None:
    c = Conversation()
    first = c.ask("Full fine-tune Llama-3-8B on one A100 80GB, batch 2, 4k context")
    assert stated(first) == {
        "model": "llama-3-8b",
        "task": "full_finetune",
        "gpu": "a100-80gb",
        "num_gpus": 1,
        "batch_size": 2,
        "seq_len": 4096,
    }
    assert_tool_figures(first)

    lora = c.ask("what about with LoRA?")
    assert stated(lora) == {**stated(first), "task": "lora"}
    assert lora.estimate is not None and first.estimate is not None
    assert lora.estimate.per_gpu.total_bytes < first.estimate.per_gpu.total_bytes
    assert "Follow-up of the previous question" in lora.answer
    assert_tool_figures(lora)

    long = c.ask("and at 32k context?")
    assert stated(long) == {**stated(lora), "seq_len": 32768}
    assert long.estimate is not None and long.estimate.per_gpu.total_bytes > lora.estimate.per_gpu.total_bytes
    assert_tool_figures(long)

    bigger = c.ask("batch 16?")
    assert stated(bigger)["batch_size"] == 16 and stated(bigger)["seq_len"] == 32768

    qlora = c.ask("what about QLoRA on two 4090s?")
    assert (
        stated(qlora)["task"] == "qlora" and stated(qlora)["gpu"] == "4090" and stated(qlora)["num_gpus"] == 2
    )
    assert qlora.estimate is not None and qlora.estimate.scenario.weight_dtype == "nf4"  # default re-derived
    assert_tool_figures(qlora)

    # A new full question replaces the conversation's scenario.
    new = c.ask("Qwen2.5-7B inference on one H100 in bf16")
    assert stated(new) == {
        "model": "qwen2.5-7b",
        "task": "inference",
        "gpu": "h100",
        "num_gpus": 1,
        "weight_dtype": "bf16",
    }
    assert len(c.state.turns) == 12


def test_chinese_conversation() -> None:
    c = Conversation()
    first = c.ask("单卡4090 QLoRA 微调 Qwen2.5-14B，batch 2，序列长度 2048")
    assert first.language == "zh"
    assert stated(first)["task"] == "qlora" and stated(first)["num_gpus"] == 1
    assert_tool_figures(first)

    two = c.ask("那如果用两张卡呢?")
    assert stated(two) == {**stated(first), "num_gpus": 2}
    assert two.language == "zh" and "在上一个问题的基础上修改" in two.answer
    assert_tool_figures(two)

    h800 = c.ask("换成H800呢")
    assert stated(h800) == {**stated(two), "gpu": "h800"}
    assert h800.estimate is not None and h800.estimate.gpu.id == "h800"
    assert_tool_figures(h800)

    full = c.ask("改成全参微调呢？")
    assert stated(full)["task"] == "full_finetune"
    assert full.estimate is not None and full.estimate.scenario.weight_dtype != "nf4"  # QLoRA's base dropped
    assert_tool_figures(full)

    ckpt = c.ask("开启梯度检查点呢？")
    assert stated(ckpt)["gradient_checkpointing"] is True
    assert ckpt.estimate is not None and full.estimate is not None
    assert ckpt.estimate.component("activations").bytes < full.estimate.component("activations").bytes  # type: ignore[union-attr]

    again = c.ask("用QLoRA呢")
    assert stated(again)["task"] == "qlora"
    assert again.estimate is not None and again.estimate.scenario.weight_dtype == "nf4"


def test_language_of_short_followups_follows_the_conversation() -> None:
    c = Conversation()
    c.ask("Llama-2-7B 推理，单卡 T4")
    short = c.ask("batch 16?")  # no Chinese characters: the conversation's language is kept
    assert short.language == "zh"
    assert "结论" in short.answer


def test_followup_switching_model_keeps_the_setup() -> None:
    c = Conversation()
    c.ask("LoRA Llama-2-7B on 2x A100 40GB, batch 4, 2k context, gradient checkpointing")
    switched = c.ask("what about Llama-2-13B?")
    assert stated(switched)["model"] == "llama-2-13b"
    assert stated(switched)["num_gpus"] == 2 and stated(switched)["gradient_checkpointing"] is True
    zh = Conversation()
    zh.ask("两张A100 LoRA 微调 Qwen2.5-7B，batch 4")
    swapped = zh.ask("换成Qwen2.5-14B呢")
    assert stated(swapped)["model"] == "qwen2.5-14b" and stated(swapped)["num_gpus"] == 2


def test_concept_in_the_middle_keeps_the_scenario() -> None:
    c = Conversation()
    first = c.ask("Full fine-tune Llama-2-7B on 8 A100 with ZeRO-3")
    concept = c.ask("what is gradient checkpointing?")
    assert concept.scenario is None
    after = c.ask("and with gradient checkpointing?")
    assert stated(after) == {**stated(first), "gradient_checkpointing": True}


def test_card_size_and_precision_followups() -> None:
    """A bare card size swaps the GPU (a catalog card of that memory, shown as an assumption); precision
    wording sets the recipe the estimator uses."""
    c = Conversation()
    first = c.ask("Full fine-tune Qwen2.5-1.5B on one A100, batch 4, 2k context")
    assert first.estimate is not None and first.estimate.scenario.precision_recipe == "mixed"
    card = c.ask("what about a 24GB card?")
    assert stated(card) == {**stated(first), "gpu": "rtx-4090"}
    assert card.estimate is not None and card.estimate.gpu.id == "rtx-4090"
    assert "a 24 GB card without a name: taken as rtx-4090" in card.answer
    assert_tool_figures(card)
    amp = c.ask("and with amp?")
    assert stated(amp) == {**stated(card), "precision_recipe": "amp"}
    assert amp.estimate is not None and card.estimate is not None
    assert amp.estimate.per_gpu.total_bytes != card.estimate.per_gpu.total_bytes
    assert_tool_figures(amp)

    zh = Conversation()
    base = zh.ask("两张4090 LoRA 微调 Qwen2.5-7B，batch 2")
    small = zh.ask("那16G显存呢")
    assert stated(small) == {**stated(base), "gpu": "rtx-4060-ti"}
    assert small.estimate is not None and small.estimate.gpu.id == "rtx-4060-ti"
    assert any(a.field == "gpu" for a in small.estimate.assumptions)
    assert_tool_figures(small)
    pure = zh.ask("换成纯bf16呢")
    assert stated(pure)["precision_recipe"] == "bf16" and stated(pure)["gpu"] == "rtx-4060-ti"
    assert_tool_figures(pure)


def test_chinese_followup_keeps_chinese_suggestions() -> None:
    state = ConversationState()
    first = ask("两张4090 LoRA 微调 Qwen2.5-7B，batch 4，上下文 2k", state)
    assert isinstance(first, DoneEvent)
    state.record_turn("两张4090 LoRA 微调 Qwen2.5-7B，batch 4，上下文 2k", first.answer)
    second = ask("那如果用一张卡呢?", state)
    assert isinstance(second, DoneEvent)
    text = second.answer.answer
    assert "显卡数量 = 1" in text and "每步约慢 47%（重计算，每次处理的序列变少）" in text
    assert "GPU(s)" not in text and "fidelity" not in text
