"""Estimator speed: printed figures against the targets of issue 2 (not asserts).

- one estimate (`tools.estimator.estimate(s, plan=False)`): median / p99 over many runs, target 1 ms
- a full planner search (`estimate(s)` with the planner, on a scenario that does not fit), target 50 ms
- `vramwise estimate --scenario FILE --json`: process start to result (subprocess), target 300 ms

Run: `python benchmarks/estimator_speed.py [--runs N] [--cli-runs N]`
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_ONE_MS = 1.0
TARGET_PLAN_MS = 50.0
TARGET_CLI_MS = 300.0

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
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _line(name: str, xs: list[float], target: float) -> str:
    med, p99 = statistics.median(xs), _percentile(xs, 0.99)
    verdict = "OK" if med <= target else "SLOWER THAN TARGET"
    return f"{name:<34} median {med:8.2f} ms   p99 {p99:8.2f} ms   target {target:6.0f} ms   {verdict}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500, help="in-process estimate runs")
    ap.add_argument("--plan-runs", type=int, default=30, help="full planner searches")
    ap.add_argument("--cli-runs", type=int, default=7, help="`vramwise estimate` subprocess runs")
    args = ap.parse_args(argv)

    from tools.estimator import estimate
    from tools.planner import plan
    from tools.scenario import Scenario

    one = Scenario.model_validate(ONE)
    hard = Scenario.model_validate(PLAN)
    estimate(one, plan=False)  # warm caches (catalog JSON, imports)
    base = estimate(hard, plan=False)

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s)")
    print(
        _line(
            "one estimate (plan=False)", _time_ms(lambda: estimate(one, plan=False), args.runs), TARGET_ONE_MS
        )
    )
    evaluated = plan(base).evaluated
    plan_times = _time_ms(lambda: plan(base), args.plan_runs)
    print(_line(f"planner search ({evaluated} estimates)", plan_times, TARGET_PLAN_MS))
    print(_line("estimate() incl. planner", _time_ms(lambda: estimate(hard), args.plan_runs), TARGET_PLAN_MS))
    rl = estimate(Scenario.model_validate(PLAN_RL), plan=False)
    rl_evaluated = plan(rl).evaluated
    print(
        _line(
            f"planner search, PPO ({rl_evaluated} est.)",
            _time_ms(lambda: plan(rl), args.plan_runs),
            TARGET_PLAN_MS,
        )
    )

    exe = shutil.which("vramwise") or str(Path(sys.executable).with_name("vramwise"))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(PLAN, f)
        path = f.name
    try:
        cli = []
        for _ in range(args.cli_runs):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [exe, "estimate", "--scenario", path, "--json"], capture_output=True, text=True
            )
            cli.append((time.perf_counter() - t0) * 1000)
            if proc.returncode != 0:
                print(f"`vramwise estimate` failed (rc {proc.returncode}): {proc.stderr.strip()[:300]}")
                break
        print(_line("`vramwise estimate` process", cli, TARGET_CLI_MS))
    finally:
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
