"""The terminal's rough edges (issue 29): `vramwise --version`, `models`, `gpus`, `quiz --list-topics`, a
reader that leaves the pipe early (`| head`), `**` on a terminal, and no "formulas and sources below" in
`vramwise ask`'s short answer where nothing follows."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

from service.channels.cli_ask import _for_terminal, run_ask
from service.channels.cli_lists import run_gpus, run_models, run_topics
from service.coach.coach import Coach
from tools.catalog.gpus import list_gpus
from tools.catalog.models import list_models

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, stdin: str | None = None, pipe_to: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "service.cli", *args]
    if pipe_to is None:
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, input=stdin)
    shell = " ".join(f"'{a}'" for a in command) + f" | {pipe_to}"
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {shell}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        input=stdin,
    )


def test_version() -> None:
    from importlib.metadata import version

    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"vramwise {version('vramwise')}"


def test_models_and_gpus_list_the_catalogs() -> None:
    out = io.StringIO()
    assert run_models(Namespace(json=False), out) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == len(list_models())
    llama = next(line for line in lines if line.startswith("llama-2-7b "))
    assert "6.74B" in llama and "Llama-2-7B" in llama
    out = io.StringIO()
    assert run_gpus(Namespace(json=False), out) == 0
    rtx = next(line for line in out.getvalue().splitlines() if line.startswith("rtx-4090 "))
    assert "23.99 GiB" in rtx  # 25,757,220,864 B (the card's published MiB) / 2**30
    out = io.StringIO()
    assert run_gpus(Namespace(json=True), out) == 0
    assert [g["id"] for g in json.loads(out.getvalue())] == [g.id for g in list_gpus()]


def test_quiz_lists_its_topics_in_each_language() -> None:
    for language in ("en", "zh"):
        out = io.StringIO()
        assert run_topics(Namespace(json=True, language=language), out) == 0
        assert json.loads(out.getvalue()) == [t.model_dump() for t in Coach.topics(language)]
    proc = cli("quiz", "--list-topics", "--language", "zh")
    assert proc.returncode == 0 and proc.stdout.startswith("seed ")
    assert len(proc.stdout.splitlines()) == len(Coach.topics("zh"))


def test_a_reader_that_leaves_early_is_not_an_error(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'quiz.sqlite3'}"
    env_db = {"VRAMWISE_DATABASE_URL": db}
    proc = subprocess.run(
        [
            "bash",
            "-c",
            f"yes 12 | '{sys.executable}' -m service.cli quiz --json --questions 40 | head -n 1;"
            + " exit ${PIPESTATUS[1]}",  # the quiz's own exit status (yes dies of SIGPIPE: 141)
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env_db},
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
    assert json.loads(proc.stdout)["question"]["text"]
    proc = cli("models", pipe_to="head -n 2")
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 2 and "Traceback" not in proc.stderr


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_ask_on_a_terminal_has_no_literal_stars_and_no_promise_of_formulas_below() -> None:
    question = "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?"
    tty, err = Terminal(), io.StringIO()
    assert run_ask(Namespace(question=question, json=False, offline=True, language=None), tty, err) == 0
    text = tty.getvalue()
    assert "**" not in text and "\x1b[1mVerdict: does not fit.\x1b[22m" in text
    assert (
        "formulas and sources below" not in text
        and "Accuracy: typically within" in text
        and "--detail" in text
    )
    piped = io.StringIO()
    assert run_ask(Namespace(question=question, json=False, offline=True, language="zh"), piped, err) == 0
    assert "**" in piped.getvalue()  # Markdown kept for a pipe or a file
    assert "见下文" not in piped.getvalue() and "准确度" in piped.getvalue()
    assert _for_terminal("a **b** c", Terminal()) == "a \x1b[1mb\x1b[22m c"
