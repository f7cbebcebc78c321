"""`vramwise ask "QUESTION" [--json] [--offline] [--language en|zh]`.

Streams the answer to the terminal as tokens arrive; `--json` prints one Answer object
(docs/reference.md). Bad input: exit code 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import TextIO

EXIT_OK = 0
EXIT_BAD_INPUT = 2


async def _ask(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from service.agent.base import ConversationState
    from service.agent.events import DoneEvent, ErrorEvent, NoticeEvent, TokenEvent
    from service.agent.factory import build_agent
    from service.settings import Settings

    agent = build_agent(Settings(), force_offline=bool(getattr(args, "offline", False)))
    as_json = bool(getattr(args, "json", False))
    async for event in agent.stream(args.question, ConversationState(), getattr(args, "language", None)):
        if isinstance(event, TokenEvent) and not as_json:
            out.write(event.text)
            out.flush()
        elif isinstance(event, NoticeEvent):
            err.write(f"note: {event.message}\n")
        elif isinstance(event, ErrorEvent):
            err.write(" ".join(event.message.split()) + "\n")
            return EXIT_BAD_INPUT
        elif isinstance(event, DoneEvent):
            if as_json:
                out.write(event.answer.model_dump_json(indent=2) + "\n")
            elif not event.answer.answer.endswith("\n"):
                out.write("\n")
            return EXIT_OK
    err.write("ask: the agent ended without an answer\n")
    return EXIT_BAD_INPUT


def run_ask(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    question = (getattr(args, "question", "") or "").strip()
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
