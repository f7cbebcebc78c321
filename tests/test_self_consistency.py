"""One answer never contradicts itself, over the whole realistic-question suite (tests/parser_suite.py).

For every question that estimates: the verdict agrees with the headroom; the fewest-GPUs figure agrees with the
verdict for the layout it names; every suggestion's fits/does-not-fit word agrees with its own figure; a fitting
serving job leaves KV room for the batch it was asked for; the summary is at most six lines, and every figure it
shows is in the full answer.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from service.agent.base import ConversationState
from service.agent.events import Answer, DoneEvent
from service.agent.offline import OfflineAgent
from tests.parser_suite import ESTIMATES
from tools.result import Estimate

_GIB = re.compile(r"\d[\d,]*\.\d{2} GiB")


def _answer(question: str) -> Answer | None:
    async def run() -> list[Any]:
        return [e async for e in OfflineAgent(preload=False).stream(question, ConversationState())]

    last = asyncio.run(run())[-1]
    return last.answer if isinstance(last, DoneEvent) else None


def _usable(e: Estimate) -> float:
    return e.gpu.memory_bytes * (1 - e.safety_margin)


def check(answer: Answer) -> None:
    e = answer.estimate
    assert e is not None
    n = e.scenario.num_gpus or 1
    assert e.fits == (e.headroom_bytes >= 0)
    if e.per_gpu.peak_phase != "serving":  # a serving engine's reservation is its own budget (headroom above)
        assert e.fits == (e.per_gpu.total_bytes <= _usable(e) + 1)
    if e.fits and e.min_gpus is not None and not e.min_gpus_changes:
        assert e.min_gpus <= n, (e.min_gpus, n)
    if not e.fits and e.min_gpus is not None and not e.min_gpus_changes:
        assert e.min_gpus > n, f"'fewest that fit: {e.min_gpus}' as stated, but {n} as stated do not fit"
    for s in e.suggestions if e.per_gpu.peak_phase != "serving" else []:
        assert s.fits == (s.total_bytes <= _usable(e) + 1), (s.change, s.total_bytes, s.fits)
    if e.serving is not None and e.fits and e.scenario.task == "inference":
        batch = e.scenario.batch_size or 1
        assert e.serving.max_concurrent_sequences >= batch, (e.serving.max_concurrent_sequences, batch)
    summary = answer.summary.splitlines()
    assert 1 <= len(summary) <= 6
    for figure in _GIB.findall(answer.summary):
        assert answer.answer.count(figure) >= 2 or figure in answer.answer.split(answer.summary, 1)[1], figure
    assert answer.answer.count(answer.summary) == 1


@pytest.mark.parametrize(("question", "expected", "asks"), ESTIMATES, ids=[q[:60] for q, _, _ in ESTIMATES])
def test_an_answer_never_contradicts_itself(
    question: str, expected: dict[str, Any], asks: str | None
) -> None:
    answer = _answer(question)
    if answer is None:  # a scenario the estimator refuses (a clear error): nothing to contradict
        return
    check(answer)


@pytest.mark.parametrize(
    "question",
    [
        "LoRA llama 3 8b on a 4090 with batch 8 seq 4096",
        "Qwen2.5-7B GRPO on 4 H100",
        "DPO llama 3 8b on 2 A100 with bs 8 seq 4096",
        "QLoRA Llama-2-70B on one 4090, batch 4, seq 4096",
        "Qwen2.5-14B LoRA 单卡4090 batch 8 上下文 8k",
        "Qwen2.5-7B GRPO 4张H100 每个prompt 8个回答",
    ],
)
def test_adapter_and_rl_advice_is_runnable_with_peft_and_trl(question: str) -> None:
    """LoRA, QLoRA, DPO, GRPO and PPO run on PEFT/TRL (HF Trainer, DeepSpeed, FSDP): no Megatron tensor,
    pipeline or sequence parallelism in their suggestions or fewest-GPUs layout unless the question asked."""
    answer = _answer(question)
    assert answer is not None and answer.estimate is not None
    e = answer.estimate
    layouts = [s.scenario_changes for s in e.suggestions] + [e.min_gpus_changes or {}]
    for changes in layouts:
        assert not {"tp", "pp", "sequence_parallel"} & set(changes), changes
    check(answer)


@pytest.mark.parametrize(
    "question",
    [
        "Mixtral 8x7B full finetune, how many A100 80GB do I need with ZeRO-3 without offload?",
        "Yi-34B 全参微调,8张4090,不用offload,可以吗",
        "llama-3-70b full finetune on 4 H100, zero3, no offload",
    ],
)
def test_without_offload_no_suggestion_offloads(question: str) -> None:
    answer = _answer(question)
    assert answer is not None and answer.estimate is not None
    if answer.asked is not None and answer.asked.field == "num_gpus" and answer.asked.at is not None:
        # "how many do I need": answered at the fewest GPUs, with levers that keep "without offload"
        at = answer.asked.at.scenario
        assert at.offload_optimizer in (None, "none") and at.offload_params in (None, "none")
        assert answer.estimate.fits
    else:
        assert not answer.estimate.fits
    for s in answer.estimate.suggestions:
        assert s.scenario_changes.get("offload_optimizer") in (None, "none"), s.change
        assert s.scenario_changes.get("offload_params") in (None, "none"), s.change
    check(answer)
