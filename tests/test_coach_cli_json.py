"""`vramwise quiz --json` for scripts: one JSON object per line, answers read from stdin; the session
is stored and `--session` continues it; bad input exits 2 with one line on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tools.estimator import estimate
from tools.scenario import Scenario

VRAMWISE = Path(sys.executable).parent / "vramwise"


def quiz(tmp_path: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VRAMWISE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'quiz.sqlite3'}"}
    return subprocess.run(
        [str(VRAMWISE), "quiz", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_json_lines_and_a_continued_session(tmp_path: Path) -> None:
    first = quiz(
        tmp_path, "--json", "--topic", "kv_cache", "--difficulty", "2", "--questions", "1", stdin="hint\n"
    )
    assert first.returncode == 0, first.stderr
    lines = [json.loads(x) for x in first.stdout.splitlines()]
    assert [next(iter(x)) for x in lines] == ["question", "answer", "session"]
    q = lines[0]["question"]
    assert lines[1]["answer"]["correct"] is None and lines[1]["answer"]["hint"]
    kv = estimate(Scenario(**q["scenario"])).component("kv_cache").bytes

    # the same session, continued in new processes: its open question is asked again, then answered
    second = quiz(
        tmp_path, "--json", "--session", q["session_id"], "--topic", "kv_cache", "--questions", "1", stdin=""
    )
    q2 = json.loads(second.stdout.splitlines()[0])["question"]
    assert q2["question_id"] == q["question_id"]
    kv2 = estimate(Scenario(**q2["scenario"])).component("kv_cache").bytes
    third = quiz(
        tmp_path,
        "--json",
        "--session",
        q["session_id"],
        "--topic",
        "kv_cache",
        "--questions",
        "1",
        stdin=f"{kv2 * 1.01 / 2**30:.3f} GiB\n",
    )
    out = [json.loads(x) for x in third.stdout.splitlines()]
    assert out[0]["question"]["question_id"] == q2["question_id"]
    answer, session = out[1]["answer"], out[2]["session"]
    assert answer["expected"]["bytes"] > 0 and answer["correct"] is True
    assert session["session_id"] == q["session_id"] and len(session["questions"]) == 1
    assert session["score"] == {"asked": 1, "correct": 1}
    assert kv == kv2 and session["questions"][0]["hints"] == 1


def test_bad_topic_exits_2_with_one_line(tmp_path: Path) -> None:
    r = quiz(tmp_path, "--topic", "kvcache", stdin="")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "Did you mean: kv_cache?" in r.stderr and "Traceback" not in r.stderr
