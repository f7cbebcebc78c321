"""The planner's verdicts (tools.estimator.verdict_of, tools/cutoff.py): the same verdict as fit_of, and
a cut-off bound that never exceeds the exact total, on every training scenario of the golden corpus and
on the candidates the planner searches for the speed benchmark's jobs."""

from __future__ import annotations

import pytest

import tools.planner as planner
from benchmarks.estimator_speed import PLAN, PLAN_RL
from tests.golden.make_corpus import read_corpus
from tools import cutoff
from tools.errors import ScenarioError
from tools.estimator import estimate, fit_of, verdict_of
from tools.resolve import resolve
from tools.scenario import TRAINING_TASKS, Scenario

BENCH_JOBS = [
    PLAN,
    PLAN_RL,
    {
        "model": "llama-2-13b",
        "task": "dpo",
        "gpu": "a100-80gb",
        "num_gpus": 1,
        "batch_size": 2,
        "seq_len": 2048,
    },
    {"model": "qwen2.5-7b", "task": "grpo", "gpu": "4090", "num_gpus": 1, "batch_size": 8},
]


def _training_corpus() -> list[Scenario]:
    out = []
    for entry in read_corpus():
        if "error" in entry or entry["scenario"].get("task") not in TRAINING_TASKS:
            continue
        out.append(Scenario.model_validate(entry["scenario"]))
    return out


def _candidates(job: dict) -> list[Scenario]:
    """Every scenario the planner checks for `job` (recorded through its checker)."""
    seen: list[Scenario] = []
    real = planner._checker(None)

    def recording(_: object) -> object:
        def check(s: Scenario) -> object:
            seen.append(s)
            return real(s)

        return check

    original = planner._checker
    planner._checker = recording  # type: ignore[assignment]
    try:
        planner.plan(estimate(Scenario.model_validate(job), plan=False))
    finally:
        planner._checker = original  # type: ignore[assignment]
    return seen


def _same_verdict(s: Scenario) -> tuple[int, int]:
    """(1 if the verdict was cut off, else 0; 1) after checking it against fit_of."""
    try:
        exact = fit_of(s)
    except (ScenarioError, ValueError):
        with pytest.raises((ScenarioError, ValueError)):
            verdict_of(s)
        return 0, 0
    fast = verdict_of(s)
    assert fast.fits == exact.fits, s
    assert fast.total_bytes <= exact.total_bytes, s  # a cut-off total is a lower bound
    if fast.fits:
        assert fast.total_bytes == exact.total_bytes, s
    return int(fast.total_bytes < exact.total_bytes), 1


def test_verdicts_on_the_corpus_match_fit_of() -> None:
    scenarios = _training_corpus()
    assert len(scenarios) > 500
    cut = checked = 0
    for s in scenarios:
        c, n = _same_verdict(s)
        cut, checked = cut + c, checked + n
    assert cut > 50  # the cut-off is taken, not only sound


@pytest.mark.parametrize("job", BENCH_JOBS, ids=[j["task"] for j in BENCH_JOBS])
def test_verdicts_of_planner_candidates_match_fit_of(job: dict) -> None:
    candidates = _candidates(job)
    assert len(candidates) > 10
    for s in candidates:
        _same_verdict(s)


def test_no_cut_off_outside_a_verdict() -> None:
    s = Scenario(model="llama-3-8b", task="full_finetune", gpu="4090", batch_size=8, seq_len=4096)
    cutoff.check(10**15)  # no cut-off in force: nothing happens
    rs = resolve(s)
    with cutoff.cutoff(lambda bound: True), pytest.raises(cutoff.OverLimit) as over:
        from tools.estimator import footprint_for

        footprint_for(rs)
    # the bound is the resident weights, gradients, master weights and optimizer states: 16 B/param here
    assert over.value.bound == 16 * rs.model.params.total
