"""`vramwise interview` driven in a real terminal (tmux send-keys / capture-pane), English and Chinese: the
first question, a wrong answer and the interviewer's follow-up, right answers to the end, the scorecard as
Markdown, the interview stored. The answers are written from the stored question's estimator figure."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.interview_support import right_answer, wrong_answer

ROOT = Path(__file__).resolve().parent.parent
VRAMWISE = Path(sys.executable).parent / "vramwise"

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is missing: install it with `apt-get install -y tmux`"
)

TEXTS = {
    "en": {"first": "Let's warm up", "wrong": "✗ Not quite.", "follow": "x what I get", "card": "## Scorecard",
           "partial": "right after follow-ups", "stored": "stored. See it again"},
    "zh": {"first": "先热个身", "wrong": "✗ 不太对。", "follow": "倍", "card": "## 评分卡", "partial": "追问后答对",
           "stored": "已保存"},
}  # fmt: skip


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def screen(name: str) -> str:
    return tmux("capture-pane", "-p", "-J", "-S", "-5000", "-t", name)


def wait_for(name: str, needle: str, count: int = 1, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = screen(name)
        if text.count(needle) >= count:
            return text
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} x{count} not on the screen:\n{screen(name)}")


def open_turn(db: Path) -> tuple[dict, dict, int] | None:
    """(expected, spec, position) of the interview's open question; None when none is open."""
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT expected, spec, position FROM coach_interview_turns WHERE correct IS NULL"
        ).fetchone()
    return None if row is None else (json.loads(row[0]), json.loads(row[1]), row[2])


def next_turn(db: Path, name: str, after: int) -> tuple[dict, dict, int] | None:
    """The question asked after position `after`, or None when the interview has ended."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        turn = open_turn(db)
        if turn is not None and turn[2] > after:
            return turn
        if "INTERVIEW-EXITED" in screen(name):
            return None
        time.sleep(0.1)
    raise AssertionError(f"no question after {after}:\n{screen(name)}")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_interview_in_a_terminal(tmp_path: Path, language: str) -> None:
    db = tmp_path / "interview.sqlite3"
    name = f"vramwise-interview-{language}-{time.monotonic_ns()}"
    command = (
        f"cd {tmp_path} && VRAMWISE_DATABASE_URL=sqlite+aiosqlite:///{db} {VRAMWISE} interview"
        f" --language {language} --level 1; echo INTERVIEW-EXITED-$?; sleep 30"
    )
    tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "60", command)
    t = TEXTS[language]
    try:
        wait_for(name, "> ")
        assert t["first"] in screen(name)
        expected, spec, position = open_turn(db)
        tmux("send-keys", "-t", name, wrong_answer(expected, spec, language), "Enter")
        text = wait_for(name, "> ", count=2)  # graded, the follow-up asked
        assert t["wrong"] in text and t["follow"] in text
        turn = next_turn(db, name, position)
        while turn is not None:
            expected, spec, position = turn
            wait_for(name, "> ", count=position + 1)  # the question's prompt
            tmux("send-keys", "-t", name, right_answer(expected, spec, language), "Enter")
            turn = next_turn(db, name, position)
            assert position < 20
        text = wait_for(name, "INTERVIEW-EXITED-0")
        assert t["card"] in text and t["partial"] in text and t["stored"] in text
        assert "Traceback" not in text
        (ROOT / "test-output").mkdir(exist_ok=True)
        (ROOT / "test-output" / f"interview_tmux_{language}.txt").write_text(text, encoding="utf-8")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
