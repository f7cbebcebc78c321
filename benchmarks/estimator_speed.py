"""Estimator speed: printed figures against their targets (not asserts).

- one estimate (`tools.estimator.estimate(s, plan=False)`): median / p99 over many runs, target 1 ms
- a full planner search (`estimate(s)` with the planner, on a scenario that does not fit), target 50 ms
  and at most 5 estimates' worth of time (10 for PPO, whose estimates compose four models)
- `vramwise estimate --scenario FILE --json`: process start to result (subprocess), target 300 ms; also the
  child's own CPU time (user + system, from getrusage) and its ratio to the workload timed just before and
  after the processes; the table output and `--no-plan` likewise, the three interleaved run by run

Besides wall times, every in-process figure is printed as CPU time (this thread) and as a ratio to a
fixed pure-Python workload timed in the same run (`benchmarks/workload.py`), so figures compare
across machines and across moments of a shared one; the planner's searches also in units of one
estimate (the median CPU time of the line "one estimate"), and again "at the same moment": rounds of
100 single estimates then 6 searches of each kind, the median over rounds of each round's ratio.

Run: `python benchmarks/estimator_speed.py [--runs N] [--cli-runs N]`
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.workload import WorkloadTime, time_workload

TARGET_ONE_MS = 1.0
TARGET_PLAN_MS = 50.0
TARGET_CLI_MS = 300.0
TARGET_PLAN_ESTIMATES = 5.0  # the planner's search: at most this many single estimates' worth of time
TARGET_PLAN_RL_ESTIMATES = 10.0

# A fitting single-estimate scenario and a non-fitting one that makes the planner search.
ONE = {
    "model": "llama-2-7b",
    "task": "lora",
    "gpu": "a100-80gb",
    "num_gpus": 1,
    "batch_size": 4,
    "seq_len": 2048,
    "lora_rank": 8,
    "lora_targets": ["q_proj", "v_proj"],
}
PLAN_RL = {
    "model": "llama-2-7b",
    "task": "ppo",
    "gpu": "a100-80gb",
    "num_gpus": 1,
    "batch_size": 4,
    "seq_len": 2048,
}
PLAN = {
    "model": "llama-3-8b",
    "task": "full_finetune",
    "gpu": "4090",
    "num_gpus": 1,
    "batch_size": 8,
    "seq_len": 4096,
}


def _percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))
    return xs[k]


def _time_ms(fn, runs: int) -> list[float]:
    """Wall milliseconds of each run."""
    return _timed(fn, runs)[0]


def _timed(fn, runs: int) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms of this thread) of each run."""
    wall, cpu = [], []
    for _ in range(runs):
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
    return wall, cpu


def _children_cpu_ms() -> float:
    """User + system CPU of this process's waited-for children so far, in ms."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ru.ru_utime + ru.ru_stime) * 1000


def _line(
    name: str, xs: list[float], target: float, cpu: list[float] | None = None, ref: WorkloadTime | None = None
) -> str:
    med, p99 = statistics.median(xs), _percentile(xs, 0.99)
    verdict = "OK" if med <= target else "SLOWER THAN TARGET"
    line = f"{name:<34} median {med:8.2f} ms   p99 {p99:8.2f} ms   target {target:6.0f} ms   {verdict}"
    if cpu is not None and ref is not None:
        c = statistics.median(cpu)
        line += f"   CPU {c:7.3f} ms = {ref.ratio(c):.4f} x workload"
    return line


def _units_line(name: str, cpu: list[float], unit_cpu: list[float], target: float) -> str:
    n = statistics.median(cpu) / statistics.median(unit_cpu)
    verdict = "OK" if n <= target else "MORE THAN TARGET"
    return f"  {name:<32} = {n:6.1f} estimates' worth of CPU time (target <= {target:g})   {verdict}"


def _same_moment_units(one, searches: dict[str, object], rounds: int) -> dict[str, list[float]]:
    """Per round, 100 single estimates then 6 of each search, each search's median CPU over the round's
    one-estimate median: the unit timed next to what it measures (a shared box's load moves both alike)."""
    from tools.estimator import estimate
    from tools.planner import plan

    out: dict[str, list[float]] = {name: [] for name in searches}
    for _ in range(rounds):
        unit = statistics.median(_timed(lambda: estimate(one, plan=False), 100)[1])
        for name, base in searches.items():
            out[name].append(statistics.median(_timed(lambda b=base: plan(b), 6)[1]) / unit)
    return out


def at_least(least: int):
    """An argparse type: a whole number >= `least`, else a message saying what is accepted."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(f"{text!r}: give a whole number >= {least}")
        return value

    return parse


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=at_least(1), default=500, help="in-process estimate runs")
    ap.add_argument("--plan-runs", type=at_least(1), default=30, help="full planner searches")
    ap.add_argument(
        "--cli-runs", type=at_least(0), default=7, help="`vramwise estimate` subprocess runs (0: none)"
    )
    ap.add_argument(
        "--rounds", type=at_least(1), default=5, help="rounds of the same-moment estimates' worth"
    )
    args = ap.parse_args(argv)

    from tools.estimator import estimate
    from tools.planner import plan
    from tools.scenario import Scenario

    one = Scenario.model_validate(ONE)
    hard = Scenario.model_validate(PLAN)
    estimate(one, plan=False)  # warm caches (catalog JSON, imports)
    base = estimate(hard, plan=False)

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f}")
    ref_before = time_workload()
    one_wall, one_cpu = _timed(lambda: estimate(one, plan=False), args.runs)
    evaluated = plan(base).evaluated
    plan_wall, plan_cpu = _timed(lambda: plan(base), args.plan_runs)
    full_wall, full_cpu = _timed(lambda: estimate(hard), args.plan_runs)
    rl = estimate(Scenario.model_validate(PLAN_RL), plan=False)
    rl_evaluated = plan(rl).evaluated
    rl_wall, rl_cpu = _timed(lambda: plan(rl), args.plan_runs)
    same_moment = _same_moment_units(one, {"planner search": base, "planner search, PPO": rl}, args.rounds)
    ref_after = time_workload()
    # the workload timed before and after the in-process figures; the median of both halves is the unit
    ref = WorkloadTime(
        cpu_ms=statistics.median([ref_before.cpu_ms, ref_after.cpu_ms]),
        wall_ms=statistics.median([ref_before.wall_ms, ref_after.wall_ms]),
    )
    print(ref.line() + f" (before {ref_before.cpu_ms:.1f}, after {ref_after.cpu_ms:.1f})")
    print(_line("one estimate (plan=False)", one_wall, TARGET_ONE_MS, one_cpu, ref))
    print(_line(f"planner search ({evaluated} candidates)", plan_wall, TARGET_PLAN_MS, plan_cpu, ref))
    print(_units_line("planner search", plan_cpu, one_cpu, TARGET_PLAN_ESTIMATES))
    print(_line("estimate() incl. planner", full_wall, TARGET_PLAN_MS, full_cpu, ref))
    print(_line(f"planner search, PPO ({rl_evaluated} cand.)", rl_wall, TARGET_PLAN_MS, rl_cpu, ref))
    print(_units_line("planner search, PPO", rl_cpu, one_cpu, TARGET_PLAN_RL_ESTIMATES))
    for name, target in (
        ("planner search", TARGET_PLAN_ESTIMATES),
        ("planner search, PPO", TARGET_PLAN_RL_ESTIMATES),
    ):
        xs = same_moment[name]
        verdict = "OK" if statistics.median(xs) <= target else "MORE THAN TARGET"
        print(
            f"  {name + ', same moment':<32} = {statistics.median(xs):6.1f} estimates' worth, median of "
            f"{len(xs)} rounds ({min(xs):.1f}-{max(xs):.1f}; target <= {target:g})   {verdict}"
        )

    if not args.cli_runs:
        return 0
    exe = shutil.which("vramwise") or str(Path(sys.executable).with_name("vramwise"))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(PLAN, f)
        path = f.name
    try:
        _cli_lines(exe, path, args.cli_runs)
    finally:
        os.unlink(path)
    return 0


# `vramwise estimate` as a user runs it: the planner's job as one Estimate (JSON), as the table, and
# without the planner's search; the three interleaved run by run
CLI_FORMS = {
    "`vramwise estimate` process": ["--json"],
    "  the same, table": [],
    "  the same, --no-plan": ["--json", "--no-plan"],
}


def _cli_lines(exe: str, path: str, runs: int) -> None:
    walls: dict[str, list[float]] = {name: [] for name in CLI_FORMS}
    cpus: dict[str, list[float]] = {name: [] for name in CLI_FORMS}
    # the workload timed right before and after the processes: the CPU ratio is to the same moment's unit
    ref_before = time_workload()
    for _ in range(runs):
        for name, extra in CLI_FORMS.items():
            r0, t0 = _children_cpu_ms(), time.perf_counter()
            proc = subprocess.run(
                [exe, "estimate", "--scenario", path, *extra], capture_output=True, text=True
            )
            walls[name].append((time.perf_counter() - t0) * 1000)
            cpus[name].append(_children_cpu_ms() - r0)
            if proc.returncode != 0:
                print(f"`vramwise estimate` failed (rc {proc.returncode}): {proc.stderr.strip()[:300]}")
                return
    ref_after = time_workload()
    ref = WorkloadTime(
        cpu_ms=statistics.median([ref_before.cpu_ms, ref_after.cpu_ms]),
        wall_ms=statistics.median([ref_before.wall_ms, ref_after.wall_ms]),
    )
    print(
        f"workload around the processes: CPU {ref_before.cpu_ms:.1f} ms before, {ref_after.cpu_ms:.1f} ms "
        f"after; load average {os.getloadavg()[0]:.2f}"
    )
    for name in CLI_FORMS:
        print(_line(name, walls[name], TARGET_CLI_MS))
        # the child's own CPU time (user + system): what the process costs, whatever else the machine runs
        c = statistics.median(cpus[name])
        print(f"  {'':<32} CPU median {c:8.2f} ms (user + system) = {ref.ratio(c):.2f} x workload")

    return 0


if __name__ == "__main__":
    sys.exit(main())
