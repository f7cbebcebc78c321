"""Instructions a Python child process executes, counted by valgrind's callgrind: a figure the box's load
does not move (benchmarks/planner_instructions.py, benchmarks/worker_instructions.py).

A benchmark runs itself as the child (`script --child KIND CALLS`): the child warms up, then makes CALLS
calls of KIND. The count of one call is (count with K calls - count with none) / K: the start-up and the
warm-up, the same in both, cancel out.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def available() -> bool:
    """Is valgrind installed? (The benchmarks say they are skipped when not.)"""
    return shutil.which("valgrind") is not None


def count(script: str, kind: str, calls: int) -> int:
    """Instructions callgrind counts for `script --child kind calls`."""
    env = dict(os.environ, PYTHONHASHSEED="0")  # the same dict layouts, hence the same instructions
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            script,
            "--child",
            kind,
            str(calls),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or not found:
        raise SystemExit(f"callgrind run failed ({kind}, rc {out.returncode}): {out.stderr[-1500:]}")
    return int(found.group(1))


def per_call(script: str, kind: str, calls: int, warm: int | None = None) -> float:
    """Instructions of one call of `kind`: (count with `calls` calls - `warm`, the count with none) / calls."""
    if warm is None:
        warm = count(script, kind, 0)
    return (count(script, kind, calls) - warm) / calls
