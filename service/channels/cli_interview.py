"""`vramwise interview [--language en|zh] [--level N] [--json]`: the mock interview in a terminal.

Interactive: the interviewer's question, a free-text answer, the feedback, the next question (a follow-up,
a deeper question or the next topic), and the scorecard as Markdown at the end ("quit"/"退出" or the end
of input stops; the interview stays stored). `--json` for scripts: one JSON object per line
({"question": ...}, {"answer": ...}, {"interview": ...} at the end), one answer read per stdin line. The
interview is stored in the service's database (VRAMWISE_DATABASE_URL). Bad input: exit 2, one line on
stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from typing import TextIO

EXIT_OK = 0
EXIT_BAD_INPUT = 2
QUIT = {"quit", "exit", "q", "退出", "结束"}


def _plain(text: str) -> str:
    return text.replace("**", "").replace("`", "")


async def _interview(args: argparse.Namespace, inp: TextIO, out: TextIO) -> int:
    from service.coach.interview.arc import ARC
    from service.coach.interview.session import Interviewer
    from service.coach.interview.store import InterviewStore
    from service.coach.interview.text import say
    from service.settings import Settings

    store = InterviewStore(Settings().database_url)
    await store.open()
    try:
        interviewer = Interviewer(store)
        as_json = bool(args.json)

        def emit(kind: str, payload: object) -> None:
            out.write(json.dumps({kind: payload}, ensure_ascii=False) + "\n")
            out.flush()

        def show(text: str) -> None:
            out.write(_plain(text) + "\n")
            out.flush()

        started = await interviewer.start(args.language, args.level, None)
        lang = started.language
        if not as_json:
            show(say(lang, "cli", "welcome", count=len(ARC)))
        question = started.question
        while question is not None:
            if as_json:
                emit("question", question.model_dump())
            else:
                show(f"\n[{question.step}] {question.text}")
            answer = _read(inp, out, as_json)
            if answer is None:
                break
            result = await interviewer.answer(started.interview_id, answer, None)
            if as_json:
                emit("answer", result.model_dump(mode="json"))
            else:
                show(result.feedback)
            question = result.next
        return await _finish(interviewer, started.interview_id, lang, as_json, emit, show)
    finally:
        await store.close()


def _read(inp: TextIO, out: TextIO, as_json: bool) -> str | None:
    """The next non-empty answer; None at the end of input or on "quit"."""
    while True:
        if not as_json:
            out.write("> ")
            out.flush()
        line = inp.readline()
        if not line:
            return None
        answer = line.strip()
        if answer.lower() in QUIT:
            return None
        if answer:
            return answer


async def _finish(
    interviewer: object,
    interview_id: str,
    lang: str,
    as_json: bool,
    emit: Callable[[str, object], None],
    show: Callable[[str], None],
) -> int:
    from service.coach.interview.session import Interviewer
    from service.coach.interview.text import say

    assert isinstance(interviewer, Interviewer)
    record = await interviewer.record(interview_id, None)
    if as_json:
        emit("interview", record.model_dump(mode="json"))
        return EXIT_OK
    if record.scorecard is not None:
        show("\n" + await interviewer.markdown(interview_id, None))
    show(say(lang, "cli", "bye", interview_id=interview_id))
    return EXIT_OK


def run_interview(
    args: argparse.Namespace, inp: TextIO | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    from service.coach.coach import CoachError

    err_stream = err or sys.stderr
    try:
        return asyncio.run(_interview(args, inp or sys.stdin, out or sys.stdout))
    except CoachError as e:
        accepted = f" Accepted: {e.accepted}." if e.accepted else ""
        err_stream.write(f"interview: {e.field or 'input'}: {e.message}.{accepted}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_OK
