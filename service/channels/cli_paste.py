"""`vramwise estimate --from FILE [--format F]`: the job in a pasted config, command line or log, sized.

Prints what was read (the format, every key used and the Scenario field it became, every key not used and
why, what was assumed), then the estimate's table; a log or error alone prints its diagnosis. `--json`: one
object `{source, observed, scenario, estimate}` (estimate null when the paste names no model). Bad input
(an unreadable file, malformed YAML/JSON, an unknown format, a field out of range): exit 2 and one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _bad(err: TextIO, line: str) -> int:
    print(" ".join(line.split()), file=err)
    return EXIT_BAD_INPUT


def run_paste_estimate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from pydantic import ValidationError

    from service.agent.paste.answer import SUBJECT_FIELDS
    from service.agent.paste.detect import read_paste
    from service.agent.paste.diagnosis import diagnose
    from service.agent.paste.reading import LOG_FORMATS, PasteError
    from service.agent.paste.texts import error_text, reading_lines, text
    from tools.errors import ScenarioError
    from tools.scenario import Scenario

    try:
        pasted = _read(args.from_file)
    except (OSError, UnicodeDecodeError) as exc:
        return _bad(err, f"from: cannot read '{args.from_file}': {exc}. Accepted: a file path or -.")
    try:
        reading = read_paste(pasted, getattr(args, "format", None))
    except PasteError as exc:
        return _bad(err, f"from: {error_text(exc, 'en', getattr(args, 'format', None))}")
    estimate: Any = None
    scenario: Any = None
    unestimated = ""
    if any(field in reading.fields for field in SUBJECT_FIELDS):
        try:
            scenario = Scenario.model_validate(reading.fields)
            from service.hub import estimate_any_model

            estimate = estimate_any_model(scenario, plan=not getattr(args, "no_plan", False))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first.get("loc", ())) or "scenario"
            return _bad(err, f"{field}: {first.get('msg', 'invalid value')} (read from the paste).")
        except ScenarioError as exc:
            if reading.format not in LOG_FORMATS:
                return _bad(err, str(exc))
            unestimated = " ".join(str(exc).split())  # a log still gets its diagnosis
            estimate = None
    if getattr(args, "json", False):
        document = {
            "source": reading.source().model_dump(),
            "observed": reading.observed,
            "scenario": scenario.model_dump(exclude_none=True) if scenario is not None else None,
            "estimate": json.loads(estimate.model_dump_json()) if estimate is not None else None,
        }
        out.write(json.dumps(document) + "\n")
        return EXIT_OK
    lines = reading_lines(reading, reading.fields, "en")
    for section, code, values in diagnose(reading, estimate):
        lines.append(("- " if section == "lever" else "") + text("en", section, code, **values))
    if unestimated:
        lines.append(unestimated)
    elif estimate is None:
        lines.append(text("en", "text", "no_subject"))
    out.write("\n".join(lines) + "\n")
    if estimate is not None:
        from service.channels.cli_estimate import render_table

        out.write("\n" + render_table(estimate) + "\n")
    return EXIT_OK
