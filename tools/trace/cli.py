"""`vramwise trace --scenario FILE|- [--json]`: the traced peak of the real HF model for a scenario.

Exit 2 with one line on stderr for bad input, or when the `[trace]` extra is not installed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import ValidationError

from tools.errors import ScenarioError
from tools.scenario import Scenario
from tools.units import GiB

EXIT_BAD_INPUT = 2
EXIT_TRACE_FAILED = 1
INSTALL_HINT = "vramwise trace needs the [trace] extra (torch, transformers, peft): pip install '.[trace]'"


def _read_scenario(path: str) -> Scenario:
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()  # noqa: SIM115
    except OSError as exc:
        raise ScenarioError("scenario", f"cannot read {path}: {exc.strerror}") from exc
    try:
        return Scenario.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ScenarioError("scenario", f"not valid JSON: {exc.msg} (line {exc.lineno})") from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "scenario"
        raise ScenarioError(field, err["msg"]) from exc


def _gib(n: int) -> str:
    return f"{n / GiB:.2f} GiB"


def format_text(result: dict[str, Any]) -> str:
    lines = [
        f"traced peak: {_gib(result['peak_bytes'])} ({result['peak_bytes']} bytes) in phase {result['peak_phase']}",
        f"model: {result['family']}, task {result['task']}, recipe {result['recipe']}, batch {result['batch_size']}, "
        f"seq {result['seq_len']}, checkpointing {'on' if result['gradient_checkpointing'] else 'off'}, "
        f"attention {result['attention']}",
        "breakdown at the peak:",
    ]
    lines += [f"  {name:28s} {_gib(b):>12s}" for name, b in result["breakdown"].items() if b]
    lines.append("per phase (peak / at end):")
    lines += [
        f"  {p['name']:10s} {_gib(p['peak_bytes']):>12s} / {_gib(p['end_bytes'])}" for p in result["phases"]
    ]
    lines.append("attention kernels traced (CPU): " + (", ".join(result["kernels"]) or "none"))
    lines.append("on a GPU:")
    lines += [f"  - {d}" for d in result["gpu_differences"]]
    lines += [f"assumed: {a}" for a in result.get("assumptions", [])]
    versions = ", ".join(f"{k} {v}" for k, v in result["versions"].items())
    lines.append(f"measured on fake tensors (no memory allocated); {versions}")
    return "\n".join(lines)


def run_trace(args: argparse.Namespace) -> int:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return EXIT_BAD_INPUT
    from tools.trace.request import plan_from_scenario
    from tools.trace.steps import request_from_plan, trace

    try:
        plan = plan_from_scenario(_read_scenario(args.scenario))
        result = trace(request_from_plan(plan)).as_dict()
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (RuntimeError, ValueError, NotImplementedError, TypeError) as exc:
        # the model code itself failed on fake tensors: say so in one line, no traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(
            f"error: this architecture could not be traced ({type(exc).__name__}: {first[:200]})",
            file=sys.stderr,
        )
        return EXIT_TRACE_FAILED
    result["assumptions"] = plan.assumptions
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(format_text(result))
    return 0
