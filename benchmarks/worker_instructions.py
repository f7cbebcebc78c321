"""An offline-agent worker's answer over the chat load mix, counted in instructions and timed in CPU.

The work a worker process does for one chat stream (service/api/agent_pool.py): read the request frame,
answer the question (`_answer`: parse, estimate with the planner, the answer text in pieces, the wire form),
frame the reply. The mix is benchmarks/load_chat.py's: its six questions (English and Chinese), each a new
conversation, and the follow-up "what about with a batch of 4?" in each, with the conversation state the
serving process sends (the first answer recorded). The request frames are made during the warm-up; the
socket's system calls are left out.

- Instructions (valgrind's callgrind, benchmarks/callgrind.py): a child answers the mix K times after its
  warm-up, minus a child that only warms up, over its K rounds' answers. The box's load does not move it.
- CPU time (`--time`): this thread's CPU per answer, and its ratio to the fixed workload timed in the same
  run (benchmarks/workload.py), with the workers' GC settings (service/app.py tune_gc_for_serving).

Run: `python benchmarks/worker_instructions.py [--rounds 3] [--time]` (callgrind: ~1 minute).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import callgrind
from benchmarks.estimator_speed import at_least
from benchmarks.load_chat import QUESTIONS

ANSWERS = 2 * len(QUESTIONS)  # one round of the mix: each question, then its follow-up


def _requests() -> list[bytes]:
    """The mix's request frames as the serving process sends them: (id, question, state, language)."""
    from benchmarks.chat_inprocess import FOLLOW_UP
    from service.agent.base import ConversationState
    from service.api import agent_pool

    frames: list[bytes] = []
    for question in QUESTIONS:
        state = ConversationState(conversation_id="c")
        frames.append(agent_pool._frame((1, question, state, None)))
        events = list(agent_pool._worker["agent"].events(question, state, None))
        state.record_turn(question, events[-1].answer)
        frames.append(agent_pool._frame((2, FOLLOW_UP, state, None)))
    return frames


def _answer_all(frames: list[bytes]) -> list[bytes]:
    """Each request answered as `agent_pool._serve_worker` does: the reply frames."""
    from service.api import agent_pool

    return [
        agent_pool._frame((request_id, True, agent_pool._answer(question, state, language)))
        for frame in frames
        for request_id, question, state, language in agent_pool._frames(bytearray(frame))
    ]


def _worker(tune_gc: bool = True) -> list[bytes]:
    """A warmed-up worker: GC as the serving process sets it before it forks the workers, then (as a worker
    does after the fork) its agent; the mix's frames."""
    from service.agent.factory import build_agent
    from service.api import agent_pool
    from service.app import tune_gc_for_serving
    from service.settings import Settings

    if tune_gc:
        tune_gc_for_serving()
    agent_pool._worker["agent"] = build_agent(Settings(), force_offline=True)
    frames = _requests()
    for _ in range(2):
        _answer_all(frames)
    return frames


def _child(rounds: int) -> None:
    frames = _worker()
    for _ in range(rounds):
        _answer_all(frames)


def _time(rounds: int) -> None:
    from benchmarks.workload import time_workload

    frames = _worker()
    ref_before = time_workload()
    per_answer = []
    for _ in range(rounds):
        c0 = time.thread_time()
        replies = _answer_all(frames)
        per_answer.append((time.thread_time() - c0) * 1000 / len(frames))
    ref = statistics.median([ref_before.cpu_ms, time_workload().cpu_ms])
    med = statistics.median(per_answer)
    print(
        f"worker answer over the load mix: CPU {med:.3f} ms (median of {rounds} rounds of {len(frames)}) "
        f"= {med / ref:.4f} x workload ({ref:.1f} ms); reply {sum(map(len, replies)) / len(frames) / 1024:.1f} KiB"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--rounds", type=at_least(1), help="rounds of the mix counted (callgrind, default 3) or timed (20)"
    )
    ap.add_argument("--time", action="store_true", help="CPU time per answer instead of instructions")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "CALLS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(int(args.child[1]))
        return 0
    if args.time:
        _time(args.rounds or 20)
        return 0
    rounds = args.rounds or 3
    if not callgrind.available():
        print(
            "skipped: valgrind is not installed (Debian: apt-get install valgrind); --time needs no valgrind"
        )
        return 0
    per_answer = callgrind.per_call(__file__, "mix", rounds) / ANSWERS
    print(
        f"worker answer over the load mix: {per_answer / 1e6:.2f} M instructions "
        f"({ANSWERS * rounds} answers counted)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
