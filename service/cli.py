"""`vramwise` command line: a thin adapter over the estimator, the agent and the server.

Imports are lazy so that `vramwise estimate` never loads LangChain, FastAPI or torch (process start to
result ~3.0 x benchmarks/workload.py's time: benchmarks/estimator_speed.py). Bad input: exit code 2 and one
line on stderr.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys

EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vramwise", description="How much GPU memory does this need?")
    p.add_argument("--version", action="version", version=f"vramwise {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    est = sub.add_parser("estimate", help="run the estimator on a scenario (JSON file, - for stdin)")
    given = est.add_mutually_exclusive_group(required=True)
    given.add_argument("--scenario", help="scenario JSON file, or - for stdin")
    given.add_argument(
        "--from",
        dest="from_file",
        help="a pasted config, command line or log (file, or - for stdin): read and sized (service/agent/paste)",
    )
    est.add_argument(
        "--format", default=None, help="the paste's format (default: detected), e.g. axolotl-yaml"
    )
    est.add_argument("--json", action="store_true", help="print one Estimate object")
    est.add_argument("--no-plan", action="store_true", help="skip the planner's suggestions")

    ask = sub.add_parser("ask", help="answer a question (offline agent unless an LLM is configured)")
    ask.add_argument("question", help="the question, in English or Chinese")
    ask.add_argument("--json", action="store_true", help="print one Answer object")
    ask.add_argument(
        "--detail",
        action="store_true",
        help="stream the full cited breakdown (every component's formula, substitution and source)",
    )
    ask.add_argument("--offline", action="store_true", help="force the offline agent")
    ask.add_argument("--language", choices=["en", "zh"], default=None)

    srv = sub.add_parser("serve", help="run the HTTP service")
    srv.add_argument("--host", default=None)
    srv.add_argument("--port", type=int, default=None)

    quiz = sub.add_parser("quiz", help="the interview coach: GPU-memory questions graded by the estimator")
    quiz.add_argument("--language", choices=["en", "zh"], default=None)
    quiz.add_argument("--topic", default=None, help="a topic id (GET /v1/coach/topics); default: adaptive")
    quiz.add_argument("--difficulty", type=int, choices=[1, 2, 3], default=None)
    quiz.add_argument("--session", default=None, help="continue a stored session")
    quiz.add_argument("--questions", type=int, default=None, help="stop after this many questions")
    quiz.add_argument("--json", action="store_true", help="one JSON object per line; answers from stdin")
    quiz.add_argument("--list-topics", action="store_true", help="print the topic ids and titles, then exit")

    for name, what in (("models", "the LLMs the estimator knows"), ("gpus", "the GPUs the estimator knows")):
        listing = sub.add_parser(name, help=f"list {what}: id, size, name")
        listing.add_argument("--json", action="store_true", help="one JSON array")

    interview = sub.add_parser(
        "interview", help="a mock interview: chained questions, follow-ups, a scorecard"
    )
    interview.add_argument("--language", choices=["en", "zh"], default=None)
    interview.add_argument("--level", type=int, choices=[1, 2, 3], default=None)
    interview.add_argument("--json", action="store_true", help="one JSON object per line; answers from stdin")

    tr = sub.add_parser(
        "trace", help="measure the real HF model's peak on fake tensors (needs the [trace] extra)"
    )
    tr.add_argument("--scenario", required=True, help="scenario JSON file, or - for stdin")
    tr.add_argument("--json", action="store_true")
    return p


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vramwise")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except BrokenPipeError:  # `vramwise ... | head`: the reader left; not an error of ours
        # Python docs (signal, "Note on SIGPIPE"): point stdout at devnull so the exit flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _run(args: argparse.Namespace) -> int:
    if args.command == "estimate":
        from service.channels.cli_estimate import run_estimate

        # One estimate and the process ends: the cyclic collector would only walk, again and again, the
        # objects the imports create (pydantic's schemas, the catalog) and free little (11-15 ms of the
        # process, peak memory within 1 MB). It is back on when the estimate returns.
        # At exit, the interpreter's finalization runs full collections over all those objects again
        # (35-60 ms, a tenth of the process); frozen first (atexit runs before finalization), they are
        # left to the process's end, as any exit that skips finalization leaves them. Nothing changes
        # for a caller that goes on running: the handler runs only when its interpreter exits.
        atexit.unregister(gc.freeze)  # once, however many estimates an in-process caller runs
        atexit.register(gc.freeze)
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return run_estimate(args)
        finally:
            if was_enabled:
                gc.enable()
    if args.command == "ask":
        from service.channels.cli_ask import run_ask

        return run_ask(args)
    if args.command == "serve":
        from service.channels.cli_serve import run_serve

        return run_serve(args)
    if args.command in ("models", "gpus") or (args.command == "quiz" and args.list_topics):
        from service.channels import cli_lists

        run = {"models": cli_lists.run_models, "gpus": cli_lists.run_gpus}.get(
            args.command, cli_lists.run_topics
        )
        return run(args)
    if args.command == "quiz":
        from service.channels.cli_quiz import run_quiz

        return run_quiz(args)
    if args.command == "interview":
        from service.channels.cli_interview import run_interview

        return run_interview(args)
    if args.command == "trace":
        from tools.trace.cli import run_trace

        return run_trace(args)
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
