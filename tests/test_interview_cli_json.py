"""`vramwise interview --json` for scripts (in-process, a temporary database): one JSON object per line,
the question, the graded answer with the next question, and the stored interview when input ends; bad
input exits 2 with one line."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from service.channels.cli_interview import run_interview
from service.coach.expected import estimate_for, expected_value


def _args(**values: object) -> argparse.Namespace:
    return argparse.Namespace(**{"language": None, "level": None, "json": True, **values})


def test_json_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VRAMWISE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'cli.sqlite3'}")
    out, err = io.StringIO(), io.StringIO()
    # the first question is the bf16 weights of a 7-8B model (14.5-16.1 GB): 45 GB is about 3x too much
    code = run_interview(_args(language="zh"), io.StringIO("大概45GB\n"), out, err)
    assert code == 0 and err.getvalue() == ""
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [next(iter(x)) for x in lines] == ["question", "answer", "question", "interview"]
    question, answer, record = lines[0]["question"], lines[1]["answer"], lines[3]["interview"]
    assert (
        question["step"] == 1 and question["topic"] == "weights_precision" and "先热个身" in question["text"]
    )
    weights = expected_value(estimate_for(question["scenario"], question["quantity"]), question["quantity"])
    assert answer["grade"] == {
        "correct": False,
        "expected": None,
        "given": answer["grade"]["given"],
        "error_pct": None,
    }
    assert answer["next"] == lines[2]["question"] and answer["next"]["follow_up"] is True
    ratio = 45e9 / weights["bytes"]  # the follow-up says how far off the figure is
    assert f"{ratio:.1f} 倍" in answer["next"]["text"]
    assert record["finished"] is False and len(record["turns"]) == 2
    assert record["turns"][0]["answer"] == "大概45GB" and record["turns"][0]["expected"] is None


def test_bad_level_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VRAMWISE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'bad.sqlite3'}")
    err = io.StringIO()
    assert run_interview(_args(level=9), io.StringIO(""), io.StringIO(), err) == 2
    assert err.getvalue().strip() == "interview: level: level 9 is out of range. Accepted: 1, 2, 3."
