"""`vramwise quiz [--language en|zh] [--topic T] [--difficulty N] [--session ID] [--json]`.

Interactive in a terminal: a question, a free-text answer graded against the estimator, the
explanation, the score, the next question ("hint"/"提示", "skip"/"跳过", "quit"/"退出"; end of input
ends too). `--json` for scripts: one JSON object per line ({"question": ...}, {"answer": ...}, and
{"session": ...} at the end), one answer read per stdin line. The session is stored in the service's
database (VRAMWISE_DATABASE_URL), so `--session ID` continues it (its open question first). Bad input: exit 2, one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TextIO

EXIT_OK = 0
EXIT_BAD_INPUT = 2
QUIT = {"quit", "exit", "q", "退出", "结束"}
SKIP = {"skip", "next", "跳过", "下一题", "换一题"}


def _plain(text: str) -> str:
    return text.replace("**", "").replace("`", "")


async def _quiz(args: argparse.Namespace, inp: TextIO, out: TextIO) -> int:
    from service.coach.coach import Coach, check_difficulty, check_topic
    from service.coach.store import CoachStore
    from service.coach.text import fill
    from service.settings import Settings

    check_topic(args.topic)
    check_difficulty(args.difficulty)
    store = CoachStore(Settings().database_url)
    await store.open()
    try:
        coach = Coach(store)
        lang = args.language or "en"
        as_json = bool(args.json)

        def emit(kind: str, payload: object) -> None:
            out.write(json.dumps({kind: payload}, ensure_ascii=False) + "\n")
            out.flush()

        def say(text: str) -> None:
            out.write(_plain(text) + "\n")
            out.flush()

        if not as_json:
            say(fill(lang, "feedback", "cli", "welcome"))
        session_id = args.session
        asked = 0
        pending = await coach.resume(session_id) if session_id else None  # the question left open
        while args.questions is None or asked < args.questions:
            q = pending or await coach.ask(lang, args.topic, args.difficulty, session_id)
            pending = None
            session_id, lang = q.session_id, q.language
            asked += 1
            if as_json:
                emit("question", q.model_dump())
            else:
                say("\n" + q.text)
            while True:
                if not as_json:
                    out.write("> ")
                    out.flush()
                line = inp.readline()
                if not line:
                    return await _finish(coach, session_id, lang, as_json, emit, say)
                answer = line.strip()
                if not answer:
                    continue
                if answer.lower() in QUIT:
                    return await _finish(coach, session_id, lang, as_json, emit, say)
                if answer.lower() in SKIP:
                    break
                a = await coach.answer(session_id, q.question_id, answer)
                if as_json:
                    emit("answer", a.model_dump())
                else:
                    say(a.explanation)
                if a.correct is None:
                    continue
                if not as_json:
                    say(
                        fill(
                            lang,
                            "feedback",
                            "cli",
                            "score",
                            correct=a.score.correct,
                            asked=a.score.asked,
                            difficulty=a.next_difficulty,
                        )
                    )
                break
        return await _finish(coach, session_id, lang, as_json, emit, say)
    finally:
        await store.close()


async def _finish(coach, session_id, lang, as_json, emit, say) -> int:  # type: ignore[no-untyped-def]
    from service.coach.text import fill

    if session_id is None:
        return EXIT_OK
    s = await coach.session(session_id)
    if as_json:
        emit("session", s.model_dump(mode="json"))
    else:
        say(
            "\n"
            + fill(
                lang,
                "feedback",
                "cli",
                "bye",
                session_id=session_id,
                correct=s.score.correct,
                asked=s.score.asked,
            )
        )
    return EXIT_OK


def run_quiz(
    args: argparse.Namespace, inp: TextIO | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    from service.coach.coach import CoachError

    err_stream = err or sys.stderr
    try:
        return asyncio.run(_quiz(args, inp or sys.stdin, out or sys.stdout))
    except CoachError as e:
        accepted = f" Accepted: {e.accepted}." if e.accepted else ""
        near = f" Did you mean: {', '.join(e.suggestions)}?" if e.suggestions else ""
        err_stream.write(f"quiz: {e.field or 'input'}: {e.message}.{near}{accepted}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_OK
