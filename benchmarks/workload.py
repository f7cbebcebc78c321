"""A fixed pure-Python workload timed in the same run as a benchmark, so its figures compare across
machines and across moments of a shared one: a figure divided by the workload's time is the same
on a fast idle box and on a slow loaded one (to the extent both slow down alike).

The workload is `sum(i * i for i in range(10**6))`: one interpreter thread, no allocation beyond
small ints, no I/O. It is timed as CPU time of this thread (`time.thread_time`), the median of
`runs`, so other processes on the machine that take the core away do not count; the wall time is
printed beside it.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

WORKLOAD_N = 10**6


def workload() -> int:
    """The fixed workload: sum of squares below one million."""
    return sum(i * i for i in range(WORKLOAD_N))


@dataclass(frozen=True)
class WorkloadTime:
    cpu_ms: float  # median CPU time of one run (this thread)
    wall_ms: float  # median wall time of one run

    def ratio(self, ms: float) -> float:
        """`ms` (CPU or wall milliseconds of something else) in units of the workload's CPU time."""
        return ms / self.cpu_ms if self.cpu_ms > 0 else float("nan")

    def line(self) -> str:
        return (
            f"reference workload sum(i*i for i in range(10**6)): CPU {self.cpu_ms:.1f} ms "
            f"(wall {self.wall_ms:.1f} ms), median of the runs; ratios below are x this CPU time"
        )


def time_workload(runs: int = 7) -> WorkloadTime:
    """Median CPU and wall time of `runs` runs of the workload (one warm-up run first)."""
    workload()
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(runs):
        c0, w0 = time.thread_time(), time.perf_counter()
        workload()
        cpu.append((time.thread_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    return WorkloadTime(cpu_ms=statistics.median(cpu), wall_ms=statistics.median(wall))
