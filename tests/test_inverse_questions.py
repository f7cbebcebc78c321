"""Inverse questions and comparisons (tests/inverse_suite.py, 240 questions, half Chinese) through the offline
agent, each answer checked against the estimator itself: the scenario at the edge fits, one step beyond does
not (or the cap that stopped the search is named and holds); every comparison option is estimated on the
same job; the asked figure opens the summary; and the answer never contradicts itself (verdict, fewest GPUs,
fixes, serving capacity and the asked figure)."""

from __future__ import annotations

import asyncio
import re
from functools import cache

import pytest

from service.agent.base import ConversationState
from service.agent.compare_text import option_label
from service.agent.events import Answer
from service.agent.offline.agent import OfflineAgent
from tests.inverse_suite import CASES, Case
from tools.estimator import estimate, verdict_of
from tools.inverse import model_window
from tools.units import fmt_gib

CAPS = {"model_window", "kv_pool", "search_limit", "hidden_size", "highest_format", "one_gpu"}


@cache
def _agent() -> OfflineAgent:
    return OfflineAgent()


@cache
def _answer(question: str) -> Answer:
    return asyncio.run(_agent().answer(question, ConversationState()))


def test_the_suite_is_large_and_half_chinese() -> None:
    chinese = [c for c in CASES if re.search(r"[\u4e00-\u9fff]", c.question)]
    assert len(CASES) >= 200
    assert len(chinese) * 2 == len(CASES)
    assert len({c.question for c in CASES}) == len(CASES)


def _check_edge(case: Case, answer: Answer) -> None:
    asked = answer.asked
    assert asked is not None and asked.kind == case.kind and asked.field == case.field, asked
    if asked.value is None:  # not even the smallest value fits: said, and that smallest value does not fit
        assert asked.beyond is not None and not verdict_of(asked.beyond.scenario).fits
        assert not answer.estimate.fits or asked.field == "weight_dtype"
        return
    at = asked.at
    assert at is not None and verdict_of(at.scenario).fits and at.estimate.fits
    if asked.beyond is not None:
        assert not verdict_of(asked.beyond.scenario).fits, asked.beyond.scenario.stated()
    else:
        assert asked.capped_by in CAPS, asked.capped_by
    window = model_window(at.scenario)
    if asked.field in ("seq_len", "max_new_tokens"):  # a sequence (prompt + completion) within the window
        assert (at.scenario.seq_len or 0) <= window
        assert asked.capped_by != "model_window" or at.scenario.seq_len == window
    if asked.capped_by == "kv_pool":  # the engine's pool holds exactly the edge
        serving = at.estimate.serving
        pool = (
            serving.max_concurrent_sequences
            if asked.field == "concurrent_sequences"
            else serving.max_context_at_batch_1
        )
        assert asked.value == pool
    for neighbour in asked.catalog:  # the catalog models just under (fits) and over (does not fit) the edge
        params = estimate(neighbour.scenario, plan=False).params_total
        fits = verdict_of(neighbour.scenario).fits
        assert (fits, params <= asked.value) == (
            (True, True) if neighbour.label == "under" else (False, False)
        )
    # the answer's estimate is the edge job: the verdict under the asked figure is the edge's
    assert answer.estimate.per_gpu.total_bytes == at.estimate.per_gpu.total_bytes
    assert answer.estimate.fits


def _check_compare(case: Case, answer: Answer) -> None:
    asked = answer.asked
    assert asked is not None and asked.kind == "compare" and asked.field == case.field, asked
    assert len(asked.options) == case.options
    for option in asked.options:  # every option estimated on the same job: its own estimate, again
        again = estimate(option.scenario, plan=False)
        assert again.per_gpu.total_bytes == option.estimate.per_gpu.total_bytes
        assert again.fits == option.estimate.fits
    scenarios = [
        o.scenario.model_dump(exclude={case.field, "weight_dtype", "quant_method", "recompute"})
        for o in asked.options
    ]
    if case.field not in ("task", "model", "gpu", "engine"):
        assert all(s == scenarios[0] for s in scenarios), "the options differ only in the compared field"
    winner = asked.options[asked.winner or 0]
    assert option_label(winner, answer.language) in answer.summary.splitlines()[0]
    assert answer.estimate.per_gpu.total_bytes == winner.estimate.per_gpu.total_bytes
    if any(o.estimate.fits for o in asked.options):
        assert winner.estimate.fits
    for option in asked.options:  # the side-by-side table carries every option's total
        assert fmt_gib(option.estimate.per_gpu.total_bytes) in answer.answer


def _check_consistent(answer: Answer) -> None:
    est = answer.estimate
    assert est is not None
    summary = answer.summary.splitlines()
    assert 2 <= len(summary) <= 6
    assert est.fits == (est.headroom_bytes >= 0)
    if est.fits:  # a job that fits is offered no fix, and its fewest GPUs are at most its own
        assert est.min_gpus is None or est.min_gpus <= (est.scenario.num_gpus or 1)
        assert not any(line.startswith(("Cheapest fix", "最省事")) for line in summary)
    asked = answer.asked
    if asked and asked.field == "num_gpus" and asked.value is not None:
        assert (est.scenario.num_gpus or 1) == asked.value
        assert est.min_gpus is not None and est.min_gpus <= asked.value
    pool = est.serving is not None and (est.scenario.engine or "transformers") in ("vllm", "sglang")
    if asked and asked.field == "concurrent_sequences" and asked.value and pool:
        assert asked.value <= est.serving.max_concurrent_sequences
    if asked and asked.field == "seq_len" and asked.value and pool and (est.scenario.batch_size or 1) == 1:
        assert asked.value <= est.serving.max_context_at_batch_1
    for figure in re.findall(r"\d+\.\d\d GiB", answer.summary):  # every summary figure is in the breakdown
        assert figure in answer.answer.split(answer.summary, 1)[1], figure


@pytest.mark.parametrize("case", CASES, ids=[c.question[:70] for c in CASES])
def test_inverse_and_comparison_questions(case: Case) -> None:
    answer = _answer(case.question)
    assert answer.asked is not None, case.question
    if case.kind == "compare":
        _check_compare(case, answer)
    else:
        _check_edge(case, answer)
        first = answer.summary.splitlines()[0]
        value = answer.asked.value
        if value is not None and case.field != "params":
            shown = f"{value:,}" if isinstance(value, int) else str(value)
            assert shown in first, (shown, first)
        elif value is not None:
            assert f"{value / 1e9:.1f}" in first
    _check_consistent(answer)


CONVERSATIONS = [
    (["Qwen2.5-7B inference on a 4090", "what's the max context then?"], "seq_len"),
    (["Qwen2.5-7B inference on a 4090 with vllm", "那最多并发多少"], "concurrent_sequences"),
    (["QLoRA llama-3-8b on a 4090, 1024 tokens", "最大batch呢"], "batch_size"),
    (["full fine-tune llama-2-13b on an A100", "how many would I need?"], "num_gpus"),
    (["LoRA llama-3-8b on a 4090", "QLoRA 还是 LoRA？"], "task"),
]


@pytest.mark.parametrize(("turns", "field"), CONVERSATIONS, ids=[c[0][-1] for c in CONVERSATIONS])
def test_inverse_follow_ups_ask_about_the_job_before(turns: list[str], field: str) -> None:
    agent, state = _agent(), ConversationState()
    for question in turns:
        answer = asyncio.run(agent.answer(question, state))
        state.record_turn(question, answer)
    assert answer.asked is not None and answer.asked.field == field
    if answer.asked.at is not None:  # the job before, with the asked field searched
        assert answer.asked.at.scenario.model == state.scenario.model
        assert verdict_of(answer.asked.at.scenario).fits
    if answer.asked.kind != "compare":
        assert answer.asked.beyond is None or not verdict_of(answer.asked.beyond.scenario).fits
    _check_consistent(answer)
