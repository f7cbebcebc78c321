"""`vramwise quiz` driven in a real terminal (tmux send-keys / capture-pane), English and Chinese: a
question, a hint, a wrong answer graded with its explanation, a right answer, the score, quitting.
The right and wrong answers are written from the stored question's estimator figure."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.coach_support import right_answer, wrong_answer

ROOT = Path(__file__).resolve().parent.parent
VRAMWISE = Path(sys.executable).parent / "vramwise"

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is missing: install it with `apt-get install -y tmux`"
)

TEXTS = {
    "en": {"hint": "hint", "hint_out": "Hint: ", "wrong": "✗ Not quite.", "right": "✓ Correct.", "score": "Score: 1/2",
           "quit": "quit", "bye": "1/2 correct"},
    "zh": {"hint": "提示", "hint_out": "提示：", "wrong": "✗ 不太对。", "right": "✓ 正确。", "score": "得分：1/2",
           "quit": "退出", "bye": "答对 1/2"},
}  # fmt: skip


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def screen(name: str) -> str:
    return tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", name)


def wait_for(name: str, needle: str, count: int = 1, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = screen(name)
        if text.count(needle) >= count:
            return text
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} x{count} not on the screen:\n{screen(name)}")


def open_question(db: Path) -> tuple[dict, dict]:
    """(expected, spec) of the session's open question."""
    with sqlite3.connect(db) as conn:
        expected, spec = conn.execute(
            "SELECT expected, spec FROM coach_questions WHERE correct IS NULL ORDER BY created_at DESC LIMIT 1"
        ).fetchone()
    return json.loads(expected), json.loads(spec)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_quiz_in_a_terminal(tmp_path: Path, language: str) -> None:
    db = tmp_path / "quiz.sqlite3"
    name = f"vramwise-quiz-{language}-{time.monotonic_ns()}"
    command = (
        f"cd {tmp_path} && VRAMWISE_DATABASE_URL=sqlite+aiosqlite:///{db} {VRAMWISE} quiz --language {language}"
        f" --topic seed; echo QUIZ-EXITED-$?; sleep 30"
    )
    tmux("new-session", "-d", "-s", name, "-x", "220", "-y", "60", command)
    t = TEXTS[language]
    try:
        wait_for(name, "> ")
        tmux("send-keys", "-t", name, t["hint"], "Enter")
        wait_for(name, t["hint_out"])
        tmux("send-keys", "-t", name, wrong_answer(*open_question(db), language), "Enter")
        text = wait_for(name, "> ", count=3)  # graded, the next question asked
        assert t["wrong"] in text
        assert ("期望：" if language == "zh" else "Expected: ") in text  # the graded explanation
        tmux("send-keys", "-t", name, right_answer(*open_question(db), language), "Enter")
        text = wait_for(name, t["score"])
        assert t["right"] in text
        wait_for(name, "> ", count=4)
        tmux("send-keys", "-t", name, t["quit"], "Enter")
        text = wait_for(name, "QUIZ-EXITED-0")
        assert t["bye"] in text
        (ROOT / "test-output").mkdir(exist_ok=True)
        (ROOT / "test-output" / f"quiz_tmux_{language}.txt").write_text(text, encoding="utf-8")
        assert "Traceback" not in text
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
