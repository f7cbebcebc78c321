"""The benchmark scripts still run what they say they measure (their figures are printed, not asserted)."""

from __future__ import annotations

import pytest

from benchmarks import estimator_speed, planner_floor, worker_instructions
from benchmarks.load_chat import QUESTIONS
from service.api import agent_pool


def test_the_worker_benchmark_answers_the_load_mix_as_a_worker_does() -> None:
    frames = worker_instructions._worker(tune_gc=False)  # the test process keeps its own GC settings
    replies = worker_instructions._answer_all(frames)
    assert len(replies) == len(frames) == worker_instructions.ANSWERS == 2 * len(QUESTIONS)
    for reply in replies:
        [(request_id, ok, wire)] = agent_pool._frames(bytearray(reply))  # as the serving process reads it
        assert ok and request_id in (1, 2)
        kinds = [item[0] for item in wire]
        assert kinds[0] == "scenario" and "estimate" in kinds and kinds[-1] == "done"


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        (estimator_speed.main, ["--runs", "0"]),
        (estimator_speed.main, ["--cli-runs", "-1"]),
        (estimator_speed.main, ["--rounds", "x"]),
        (worker_instructions.main, ["--rounds", "0"]),
        (planner_floor.main, ["--rounds", "0"]),
    ],
)
def test_benchmarks_refuse_counts_they_cannot_run(main, argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert "give a whole number" in capsys.readouterr().err


def test_the_floor_benchmark_times_the_same_searches_in_every_mode() -> None:
    from tools import estimator, planner

    real = (estimator.resolve, estimator.footprint_for, planner._Search._evaluate)
    # measure() first checks that each mode finds the same suggestions from the same candidates
    figures = planner_floor.measure(rounds=1, searches_per_round=1)
    assert set(figures) == {"unit", *planner_floor.SEARCHES}
    for name in planner_floor.SEARCHES:
        assert set(figures[name]) == set(planner_floor.MODES)
        assert all(len(cpu) == 1 and cpu[0] > 0 for cpu in figures[name].values())
    # the estimator is left as it was
    assert (estimator.resolve, estimator.footprint_for, planner._Search._evaluate) == real
