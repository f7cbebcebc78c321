"""The planner's shortcuts: candidates it answers without estimating them, and why each answer is sound.

- A candidate that differs from one already cut off on its resident state (tools/cutoff.py) only in fields
  that state does not read (tools.planner.RESIDENT_BLIND) does not fit either. Checked here on the golden
  corpus: for every training scenario cut off that way, each such field changed leaves the same cut-off
  bound (or an estimator error, which the planner treats as "does not fit" too).
- Light levers that fit on the job's own GPU count are not searched on more GPUs.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.golden.make_corpus import read_corpus
from tools import planner as planner_module
from tools.errors import ScenarioError
from tools.estimator import Fit, estimate, verdict_of
from tools.planner import RESIDENT_BLIND, plan
from tools.scenario import Scenario

# Each RESIDENT_BLIND field, with values that move the step's activations and logits a long way.
BLIND_VALUES: dict[str, list[dict[str, Any]]] = {
    "batch_size": [{"batch_size": 1}, {"batch_size": 64}],
    "gradient_accumulation_steps": [{"gradient_accumulation_steps": 1}, {"gradient_accumulation_steps": 16}],
    "seq_len": [{"seq_len": 256}, {"seq_len": 16384}],
    "gradient_checkpointing": [{"gradient_checkpointing": True}, {"gradient_checkpointing": False}],
    "recompute": [
        {"gradient_checkpointing": True, "recompute": "full"},
        {"recompute": "selective"},
        {"gradient_checkpointing": False, "recompute": "none"},
    ],
    "cross_entropy": [
        {"cross_entropy": "chunked"},
        {"cross_entropy": "fused_linear"},
        {"cross_entropy": "standard"},
    ],
}


def _verdict(data: dict[str, Any]) -> Fit | None:
    try:
        return verdict_of(Scenario.model_validate(data))
    except (ScenarioError, ValueError):
        return None


def _cut_off_training_scenarios() -> list[tuple[dict[str, Any], Fit]]:
    """The corpus's valid training scenarios whose verdict comes from their resident state alone, each with
    that verdict."""
    out = []
    for row in read_corpus():
        if row.get("error") or row["scenario"].get("task") in (None, "inference"):
            continue
        fit = _verdict(row["scenario"])
        if fit is not None and fit.resident_over:
            out.append((row["scenario"], fit))
    return out


def test_every_blind_field_has_values_to_check() -> None:
    assert set(BLIND_VALUES) == RESIDENT_BLIND


def test_a_resident_overflow_stays_whatever_a_blind_field_says() -> None:
    scenarios = _cut_off_training_scenarios()
    tasks = {data["task"] for data, _ in scenarios}
    # not vacuous: many scenarios, RL among them (their bound is the actor's and critic's persistent state)
    assert len(scenarios) >= 100 and {"full_finetune", "lora", "ppo"} <= tasks
    checked = 0
    for data, bound in scenarios:
        for variants in BLIND_VALUES.values():
            for change in variants:
                fit = _verdict({**data, **change})
                if fit is None:  # the estimator rejects the variant: the planner skips it alike
                    continue
                assert fit.resident_over and not fit.fits, (data, change)
                assert fit.total_bytes == bound.total_bytes, (data, change)
                checked += 1
    assert checked >= 1000


def test_candidates_answered_by_a_resident_overflow_change_no_suggestion(monkeypatch) -> None:
    base = estimate(
        Scenario(
            model="llama-3-8b", task="full_finetune", gpu="4090", num_gpus=1, batch_size=8, seq_len=4096
        ),
        plan=False,
    )
    shortcut = plan(base)
    monkeypatch.setattr(planner_module, "RESIDENT_BLIND", frozenset())
    every = plan(base)
    assert [sg.model_dump() for sg in shortcut.suggestions] == [sg.model_dump() for sg in every.suggestions]
    assert (shortcut.min_gpus, shortcut.min_gpus_changes) == (every.min_gpus, every.min_gpus_changes)
    # e.g. checkpointing, chunked loss, a smaller micro-batch and a shorter sequence on their own: each reads
    # as the job's own resident state, which the checkpointing candidate showed already overflows a 4090
    assert (shortcut.evaluated, every.evaluated) == (30, 38)


def test_light_levers_that_fit_on_the_job_s_own_gpus_are_not_searched_on_more(monkeypatch) -> None:
    # LoRA on one 4090 at batch 4 does not fit; checkpointing with an 8-bit optimizer does, on that one GPU
    base = estimate(
        Scenario(model="llama-2-7b", task="lora", gpu="4090", num_gpus=1, batch_size=4), plan=False
    )
    asked: list[dict[str, Any]] = []
    evaluate = planner_module._Search._evaluate

    def recording(self: Any, changes: dict[str, Any]) -> Any:
        asked.append(dict(changes))
        return evaluate(self, changes)

    monkeypatch.setattr(planner_module._Search, "_evaluate", recording)
    result = plan(base)
    light = {"gradient_checkpointing": True, "recompute": "full", "optimizer": "adamw_8bit"}
    assert light in asked
    assert verdict_of(base.scenario.merged(**light)).fits
    # the job's own fewest-GPUs probe is the only one on another count
    assert [c for c in asked if "num_gpus" in c] == [{"num_gpus": 1024, "zero_stage": 3}]
    assert result.evaluated == len(asked) == 13
    assert not any(sg.change_code == "moves_on_gpus" for sg in result.suggestions)


@pytest.mark.parametrize("field", sorted(RESIDENT_BLIND))
def test_blind_fields_are_scenario_fields(field: str) -> None:
    assert field in Scenario.model_fields


def test_the_job_as_asked_spelt_out_is_answered_by_its_own_estimate(monkeypatch) -> None:
    """A candidate whose changes only restate the job (values the stated scenario has, or the TP and PP sizes
    the estimator gave it) is the job as asked: its verdict is the base estimate's, not estimated again.
    Checked over the golden corpus: each such candidate, estimated, gives the base's verdict (and total, when
    it fits)."""
    answered: list[tuple[Any, dict[str, Any]]] = []
    run = planner_module._Search.run

    def recording(self: Any, changes: dict[str, Any]) -> Any:
        kept = {k: v for k, v in changes.items() if getattr(self.stated, k) != v}
        if changes and (not kept or self._as_resolved(kept)):
            answered.append((self, kept))
        return run(self, changes)

    monkeypatch.setattr(planner_module._Search, "run", recording)
    for row in read_corpus():
        if row.get("estimate"):
            plan(estimate(Scenario.model_validate(row["scenario"]), plan=False))
    spelt = {"empty": 0, "sizes": 0}
    for search, kept in answered:
        spelt["sizes" if kept else "empty"] += 1
        fit = verdict_of(search.stated.merged(**kept))
        assert fit.fits == search.base.fits, (search.base.scenario, kept)
        if fit.fits:
            assert fit.total_bytes == search.base.per_gpu.total_bytes, (search.base.scenario, kept)
    # the job's own GPU count probed by the fewest-GPU search (`{"num_gpus": n}` is no change), and a
    # serving layout on it (`{"tp": 1, "pp": 1}` on one GPU)
    assert spelt["empty"] >= 20 and spelt["sizes"] >= 20, spelt
