"""`vramwise ask "QUESTION" [--detail] [--json] [--offline] [--language en|zh]`.

An estimate is answered with its short summary (verdict, per-GPU figure, biggest parts, cheapest fix)
and a hint line; `--detail` streams the full cited breakdown as tokens arrive; a concept or list answer
is printed whole. `--json` prints one Answer object (docs/reference.md; `summary` and the full `answer` both).
Bad input: exit code 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from service.agent.events import Answer

EXIT_OK = 0
EXIT_BAD_INPUT = 2


async def _ask(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from service.agent.base import ConversationState
    from service.agent.events import DoneEvent, ErrorEvent, NoticeEvent, TokenEvent
    from service.agent.factory import build_agent
    from service.settings import Settings

    agent = build_agent(Settings(), force_offline=bool(getattr(args, "offline", False)))
    as_json = bool(getattr(args, "json", False))
    detail = bool(getattr(args, "detail", False))
    async for event in agent.stream(args.question, ConversationState(), getattr(args, "language", None)):
        if isinstance(event, TokenEvent) and detail and not as_json:
            out.write(_for_terminal(event.text, out))
            out.flush()
        elif isinstance(event, NoticeEvent):
            err.write(f"note: {event.message}\n")
        elif isinstance(event, ErrorEvent):
            err.write(" ".join(event.message.split()) + "\n")
            return EXIT_BAD_INPUT
        elif isinstance(event, DoneEvent):
            answer = event.answer
            if as_json:
                out.write(answer.model_dump_json(indent=2) + "\n")
            elif not detail:
                short = answer.estimate is not None and bool(answer.summary)
                text = (
                    (_short(answer) + "\n" + _table(answer) + _hint(answer.language))
                    if short
                    else answer.answer
                )
                text = _for_terminal(text, out)
                out.write(text if text.endswith("\n") else text + "\n")
            elif not answer.answer.endswith("\n"):
                out.write("\n")
            return EXIT_OK
    err.write("ask: the agent ended without an answer\n")
    return EXIT_BAD_INPUT


def _table(answer: Answer) -> str:
    """A comparison's side-by-side table (components x options) under its summary."""
    if answer.asked is None or answer.asked.kind != "compare":
        return ""
    from service.agent.compare_text import plain_table

    return "\n" + "\n".join(plain_table(answer.asked, answer.language)) + "\n\n"


def _short(answer: Answer) -> str:
    """The summary, its accuracy line without "formulas and sources below" (nothing follows here)."""
    from service.agent.summary import accuracy_line

    assert answer.estimate is not None
    web = accuracy_line(answer.estimate, answer.language)
    cli = accuracy_line(answer.estimate, answer.language, key="accuracy_cli")
    return answer.summary.replace(web, cli) if web and cli else answer.summary


def _for_terminal(text: str, out: TextIO) -> str:
    """Markdown **bold** as the terminal's bold (ANSI SGR 1/22) on a terminal; as is into a pipe or file."""
    if not (hasattr(out, "isatty") and out.isatty()):
        return text
    return re.sub(r"\*\*([^*\n]+)\*\*", "\x1b[1m\\1\x1b[22m", text).replace("**", "")


def _hint(language: str) -> str:
    from service.agent.prompt_files import load_toml

    return str(load_toml(language, "answer.toml").get("summary", {}).get("cli_hint", "")) + "\n"


PIPE_WAIT_S = 0.5  # how long a pipe on stdin may stay silent before the question goes without it


def piped_paste(stream: TextIO | None) -> str:
    """What a file or pipe on standard input holds (`vramwise ask "..." < train.yaml`); "" for a terminal, a
    device such as /dev/null, or a pipe that stays silent (a caller's inherited stdin must not block us)."""
    import select
    import stat

    if stream is None:
        return ""
    try:
        mode = os.fstat(stream.fileno()).st_mode
        if stat.S_ISREG(mode):
            return stream.read()
        if stat.S_ISFIFO(mode) and select.select([stream], [], [], PIPE_WAIT_S)[0]:
            return stream.read()
    except (OSError, ValueError, AttributeError):  # no real file behind it (pytest's captured stdin)
        return ""
    return ""


def with_paste(question: str, paste: str) -> str:
    """The question and the piped paste as one message: the paste in a code block, as a chat would send it."""
    if not paste.strip():
        return question
    return f"{question}\n```\n{paste.strip()}\n```"


def run_ask(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    question = with_paste(
        (getattr(args, "question", "") or "").strip(), piped_paste(getattr(args, "stdin", sys.stdin))
    )
    err_stream = err or sys.stderr
    if not question:
        err_stream.write("ask: the question is empty. Accepted: a question in English or Chinese.\n")
        return EXIT_BAD_INPUT
    args.question = question
    try:
        return asyncio.run(_ask(args, out or sys.stdout, err_stream))
    except BrokenPipeError:  # `vramwise ask ... | head`: the reader left; not an error of ours
        # Python docs (signal, "Note on SIGPIPE"): point stdout at devnull so the exit flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
