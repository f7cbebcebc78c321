"""`vramwise estimate --scenario FILE|- [--json] [--no-plan]`: the estimator on one scenario.

Prints a table in GiB (or, with --json, one Estimate object). Bad input -- unreadable file, bad JSON,
unknown fields, values outside what is accepted, impossible combinations -- exits 2 with ONE line
on stderr naming the field and what is accepted. Imports stay light (pydantic + tools/ only: no
LangChain, FastAPI or torch): most of the process is the interpreter and pydantic's own import.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _validation_line(err: Any) -> str:
    """One line from a pydantic ValidationError: the first problem, its field and what is accepted."""
    from tools.scenario import Scenario

    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "scenario"
    kind = first.get("type", "")
    if kind == "extra_forbidden":
        accepted = ", ".join(Scenario.model_fields)
        return f"{loc}: unknown field. Accepted fields: {accepted}."
    msg = first.get("msg", "invalid value")
    given = first.get("input")
    given_text = (
        f" (got {json.dumps(given, ensure_ascii=False, default=str)[:60]})" if given is not None else ""
    )
    return f"{loc}: {msg}{given_text}."


def load_scenario(text: str) -> Any:
    """Parse scenario JSON into a Scenario; raises ValueError/ValidationError with a clear message."""
    from tools.scenario import Scenario

    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("scenario: expected a JSON object with fields such as model, task, gpu")
    return Scenario.model_validate(data)


def run_estimate(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    # pydantic looks for plugins by reading every installed distribution's entry points when its first
    # model is built (pydantic/plugin/_loader.py); the estimator uses none. Stated explicitly, the
    # variable is left as set (PYDANTIC_DISABLE_PLUGINS="" re-enables plugins).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from pydantic import ValidationError

    from tools.errors import ScenarioError

    # a pasted config, command line or log (service/channels/cli_paste.py)
    if getattr(args, "from_file", None):
        from service.channels.cli_paste import run_paste_estimate

        return run_paste_estimate(args, out, err)
    try:
        text = _read(args.scenario)
    except OSError as exc:
        print(
            f"scenario: cannot read '{args.scenario}': {exc.strerror or exc}. Accepted: a JSON file path or -.",
            file=err,
        )
        return EXIT_BAD_INPUT
    try:
        scenario = load_scenario(text)
        from service.hub import estimate_any_model  # catalog first, then the Hub for `org/name` ids

        result = estimate_any_model(scenario, plan=not getattr(args, "no_plan", False))
    except json.JSONDecodeError as exc:
        print(f"scenario: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}.", file=err)
        return EXIT_BAD_INPUT
    except ValidationError as exc:
        print(_validation_line(exc), file=err)
        return EXIT_BAD_INPUT
    except ScenarioError as exc:
        print(str(exc).replace("\n", " "), file=err)
        return EXIT_BAD_INPUT
    except ValueError as exc:
        print(str(exc).replace("\n", " "), file=err)
        return EXIT_BAD_INPUT
    if getattr(args, "json", False):
        out.write(result.model_dump_json() + "\n")
    else:
        out.write(render_table(result) + "\n")
    return EXIT_OK


def render_table(est: Any) -> str:
    """A plain-text table of the estimate (GiB = 2**30 bytes)."""
    from tools.units import fmt_count, fmt_gib

    s = est.scenario
    lines = [
        f"{s.model} | {s.task} | {est.gpu.name} x {s.num_gpus} | batch {s.batch_size} x seq {s.seq_len}",
        f"most loaded GPU: {est.per_gpu.gpu_role}; peak phase: {est.per_gpu.peak_phase}",
        "",
        f"{'component':<30}{'GiB':>10}  formula",
    ]
    for c in est.components:
        role = f"[{c.model_role}] " if c.model_role else ""
        lines.append(f"{role + c.name:<30}{c.bytes / 2**30:>10.2f}  {c.formula}")
    lines.append(f"{'tensor peak':<30}{est.per_gpu.tensor_peak_bytes / 2**30:>10.2f}")
    lines.append(f"{'total (nvidia-smi)':<30}{est.per_gpu.total_bytes / 2**30:>10.2f}")
    budget = est.usable_bytes
    verdict = "FITS" if est.fits else "DOES NOT FIT"
    lines.append(
        f"{verdict}: {fmt_gib(est.per_gpu.total_bytes)} of {fmt_gib(est.gpu.memory_bytes)} "
        f"(budget {fmt_gib(budget)} with a {est.safety_margin:.0%} margin; headroom {fmt_gib(est.headroom_bytes)})"
    )
    lines.append(
        f"params: {fmt_count(est.params_total)} total, {fmt_count(est.params_trainable)} trainable, "
        f"{fmt_count(est.params_active_per_token)} active per token"
    )
    if est.min_gpus is not None:
        how = est.min_gpus_changes
        layout = (
            " (as stated)"
            if how == {}
            else f" ({', '.join(f'{k}={v}' for k, v in how.items())})"
            if how
            else ""
        )
        lines.append(f"min GPUs: {est.min_gpus}{layout}")
    if est.serving is not None:
        sv = est.serving
        lines.append(
            f"serving (gpu_memory_utilization {sv.gpu_memory_utilization}): {sv.max_kv_tokens:,} KV tokens, "
            f"{sv.max_concurrent_sequences} sequences of {s.seq_len:,} tokens"
        )
    for ph in est.per_gpu.phases:
        lines.append(f"  phase {ph.phase:<16}{ph.tensor_bytes / 2**30:>10.2f} GiB")
    if est.assumptions:
        lines.append("assumptions:")
        lines += [f"  - {a.field} = {a.value}: {a.reason}" for a in est.assumptions]
    if est.notes:
        from service.agent.note_text import note_text  # the note templates, only when there are notes

        lines.append("notes:")
        lines += [f"  - {note_text(n, 'en')}" for n in est.notes]
    if est.no_effect:
        lines.append("no effect on peak memory:")
        from service.agent.note_text import no_effect_text

        lines += [f"  - {n.field} = {n.value}: {no_effect_text(n, 'en')}" for n in est.no_effect]
    if est.suggestions:
        lines.append("suggestions:")
        from service.agent.suggestion_text import change_words

        lines += [
            f"  - {change_words(sg, 'en')}: {fmt_gib(sg.total_bytes)} on {sg.num_gpus} GPU(s), {'fits' if sg.fits else 'does not fit'}"
            for sg in est.suggestions
        ]
    return "\n".join(lines)
