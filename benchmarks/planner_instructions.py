"""The planner's searches in estimates' worth, counted in instructions (valgrind's callgrind), not time.

CPU time on a shared machine moves with whatever else runs (this box's 2 cores are shared; the same
search read 17-36 estimates' worth across an afternoon). An instruction count is the same whatever the
load: callgrind counts every instruction the interpreter executes. Each figure is the count of a child
process that warms up (imports, one estimate and one search of each kind) and then makes K calls of
one kind, minus the count of a child that only warms up, over K: the instructions of one call. The
ratios use the same unit as benchmarks/estimator_speed.py: `estimate(ONE, plan=False)`.

Instructions are not time (a cache miss costs more than an add), so the ratio of counts is a stable
figure to compare versions with, beside the CPU-time ratios of estimator_speed.py, not instead of them.

Run: `python benchmarks/planner_instructions.py [--unit-calls 40 --plan-calls 4 --ppo-calls 3]`
(needs valgrind; ~2 minutes: the interpreter runs ~50x slower under callgrind).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import callgrind

TARGETS = {"planner search": 5.0, "planner search, PPO": 10.0}


def _child(kind: str, calls: int) -> None:
    """Warm up, then make `calls` calls of `kind` (what the parent counts)."""
    from benchmarks.estimator_speed import ONE, PLAN, PLAN_RL
    from tools.estimator import estimate
    from tools.planner import plan
    from tools.scenario import Scenario

    one = Scenario.model_validate(ONE)
    base = estimate(Scenario.model_validate(PLAN), plan=False)
    rl = estimate(Scenario.model_validate(PLAN_RL), plan=False)
    for _ in range(2):
        estimate(one, plan=False)
        plan(base)
        plan(rl)
    work = {"unit": lambda: estimate(one, plan=False), "plan": lambda: plan(base), "ppo": lambda: plan(rl)}
    for _ in range(calls):
        work[kind]()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unit-calls", type=int, default=40)
    ap.add_argument("--plan-calls", type=int, default=4)
    ap.add_argument("--ppo-calls", type=int, default=3)
    ap.add_argument("--child", nargs=2, metavar=("KIND", "CALLS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return 0
    if not callgrind.available():
        print("skipped: valgrind is not installed (Debian: apt-get install valgrind)")
        return 0
    warm = callgrind.count(__file__, "unit", 0)
    per_call = {
        kind: callgrind.per_call(__file__, kind, n, warm)
        for kind, n in (("unit", args.unit_calls), ("plan", args.plan_calls), ("ppo", args.ppo_calls))
    }
    unit = per_call["unit"]
    print(f"one estimate (plan=False): {unit / 1e6:.2f} M instructions")
    for name, kind in (("planner search", "plan"), ("planner search, PPO", "ppo")):
        worth = per_call[kind] / unit
        verdict = "OK" if worth <= TARGETS[name] else "MORE THAN TARGET"
        print(
            f"{name + ':':<22} {per_call[kind] / 1e6:7.2f} M instructions = {worth:5.1f} estimates' worth"
            f" (target <= {TARGETS[name]:g})   {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
