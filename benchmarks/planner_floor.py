"""Where the planner's search spends its time: the memory model, the resolution, and the rest.

A what-if, measured: the same searches as benchmarks/estimator_speed.py (`plan(base)` of PLAN and PLAN_RL),
timed three ways, interleaved round by round:

- as is;
- footprints free: each candidate's footprint (tools.estimator.footprint_for: the components, RL's four
  models) is looked up from a first search instead of computed, as a perfectly incremental memory model
  would give it (every component reused, only what a candidate changes recomputed, at no cost);
- footprints and resolution free: each candidate's resolved scenario (tools.resolve.resolve) is looked up
  too. What is left is the planner's own steps (levers, keys, ladders, the suggestions kept), each
  candidate's validation (Scenario.merged_checked) and its verdict's arithmetic;
- verdicts free: each candidate's verdict (the planner's `_Search._evaluate`) is looked up: the planner's
  own steps alone.

Each line is CPU time of this thread and estimates' worth (the unit of estimator_speed.py: the median of
`estimate(ONE, plan=False)` timed in the same round). The lookups are keyed by the candidate's changes,
made only inside the planner's evaluation of a candidate (their own cost, a key and a dict lookup per
candidate, counts in the two "free" lines); the searches are checked to give the same suggestions and
candidates in every mode. Run: `python benchmarks/planner_floor.py [--rounds 5]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.estimator_speed import (
    ONE,
    PLAN,
    PLAN_RL,
    TARGET_PLAN_ESTIMATES,
    TARGET_PLAN_RL_ESTIMATES,
    _timed,
    at_least,
)

MODES = ("as is", "footprints free", "footprints and resolution free", "verdicts free")
SEARCHES = {
    "planner search": (PLAN, TARGET_PLAN_ESTIMATES),
    "planner search, PPO": (PLAN_RL, TARGET_PLAN_RL_ESTIMATES),
}


class _Lookups:
    """Tables of what each candidate's resolution and footprint gave in a first search, by candidate."""

    def __init__(self) -> None:
        self.candidate: Hashable | None = None  # the candidate being evaluated (None: outside an evaluation)
        self.tables: dict[str, dict[Hashable, Any]] = {"resolve": {}, "footprint": {}, "verdict": {}}

    def looked_up(self, name: str, real: Callable[[Any], Any], free: bool) -> Callable[[Any], Any]:
        table = self.tables[name]

        def call(arg: Any) -> Any:
            key = self.candidate
            if key is None:
                return real(arg)
            if key not in table:  # the first search computes and records
                table[key] = real(arg)
            return table[key] if free else real(arg)

        return call


@contextmanager
def _mode(lookups: _Lookups, mode: str, search_id: str, record: bool = False) -> Iterator[None]:
    """The estimator's resolution and footprints as `mode` says, for the searches made inside the block
    (as is: nothing replaced, unless `record`: computed and recorded for the other modes)."""
    from tools import estimator, planner

    if mode == MODES[0] and not record:
        yield
        return
    saved = (estimator.resolve, estimator.footprint_for, planner._Search._evaluate)
    evaluate = saved[2]

    verdicts = lookups.tables["verdict"]

    def evaluating(self: Any, changes: dict[str, Any]) -> Any:
        key = lookups.candidate = (search_id, planner._changes_key(changes))
        try:
            if mode == MODES[3]:
                self.evaluated += 1  # as _evaluate counts it
                return verdicts[key]
            verdicts[key] = evaluate(self, changes)
            return verdicts[key]
        finally:
            lookups.candidate = None

    estimator.resolve = lookups.looked_up("resolve", saved[0], mode == MODES[2])
    estimator.footprint_for = lookups.looked_up("footprint", saved[1], mode in MODES[1:3])
    planner._Search._evaluate = evaluating
    try:
        yield
    finally:
        estimator.resolve, estimator.footprint_for, planner._Search._evaluate = saved


def _searched(result: Any) -> tuple[Any, ...]:
    """What a search found, to compare the modes with."""
    return (
        [sg.model_dump() for sg in result.suggestions],
        result.min_gpus,
        result.min_gpus_changes,
        result.evaluated,
    )


def measure(rounds: int, searches_per_round: int = 6) -> dict[str, dict[str, list[float]]]:
    """Per search and mode, each round's median CPU ms of one search, and (key "unit") each round's median
    CPU ms of one estimate."""
    from tools.estimator import estimate
    from tools.planner import plan
    from tools.scenario import Scenario

    one = Scenario.model_validate(ONE)
    bases = {
        name: estimate(Scenario.model_validate(data), plan=False) for name, (data, _) in SEARCHES.items()
    }
    lookups = _Lookups()
    expected = {}
    for name, base in bases.items():  # the tables, from one search as is
        with _mode(lookups, MODES[0], name, record=True):
            expected[name] = _searched(plan(base))
    for name, base in bases.items():
        for mode in MODES[1:]:
            with _mode(lookups, mode, name):
                got = _searched(plan(base))
            if got != expected[name]:
                raise AssertionError(f"{name}: the search found something else with {mode}")
    out: dict[str, dict[str, list[float]]] = {"unit": {"": []}}
    out.update({name: {mode: [] for mode in MODES} for name in bases})
    for _ in range(rounds):
        out["unit"][""].append(statistics.median(_timed(lambda: estimate(one, plan=False), 100)[1]))
        for name, base in bases.items():
            for mode in MODES:
                with _mode(lookups, mode, name):
                    cpu = _timed(lambda b=base: plan(b), searches_per_round)[1]
                out[name][mode].append(statistics.median(cpu))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=at_least(1), default=5, help="rounds of the three modes (default 5)")
    args = ap.parse_args(argv)
    figures = measure(args.rounds)
    units = figures["unit"][""]
    unit = statistics.median(units)
    print(f"one estimate (plan=False): CPU {unit:.3f} ms, median of {args.rounds} rounds of 100")
    for name, (_, target) in SEARCHES.items():
        print(f"{name} (target <= {target:g} estimates' worth):")
        for mode in MODES:
            worth = statistics.median(c / u for c, u in zip(figures[name][mode], units, strict=True))
            cpu = statistics.median(figures[name][mode])
            print(f"  {mode:<32} CPU {cpu:7.3f} ms = {worth:5.1f} estimates' worth")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
