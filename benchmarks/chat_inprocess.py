"""The serving process's work per chat stream, in-process: no sockets, no worker processes.

`create_app`'s ASGI app is called directly for `--concurrency` concurrent `POST /v1/chat` streams, a round of
new questions and then a follow-up in each conversation, `--pairs` times: every middleware, FastAPI's
routing, validation and dependencies, the turn runner, the conversation store on a SQLite file in a temp
dir, EventStream and the frames. The offline agent's worker is replaced by its answers recorded once at the
start (the same wire form `sse_wire.encode` gives a worker's events), so the serving side's decoding of a
worker's answer is kept and the workers' CPU is not counted. Prints the CPU time (this thread) per stream and
the garbage collector's share of it.

The box this runs on is shared and its speed moves; for a figure that does not, count instructions:

    valgrind --tool=callgrind --callgrind-out-file=/dev/null python benchmarks/chat_inprocess.py --pairs 1
    valgrind --tool=callgrind --callgrind-out-file=/dev/null python benchmarks/chat_inprocess.py --pairs 2

and divide the difference of the two "Collected" totals by 2 x concurrency (one more pair of rounds: the
start-up, the same in both, cancels out). benchmarks/README.md ("Chat load") has the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.load_chat import QUESTIONS
from service.agent.base import ConversationState
from service.agent.offline.agent import OfflineAgent
from service.api import sse_wire
from service.api.agent_pool import ProcessPoolAgent, coalesce_tokens
from service.app import create_app
from service.settings import Settings

FOLLOW_UP = "what about with a batch of 4?"


async def recorded_answers() -> dict[str, list[sse_wire.Wire]]:
    """Each question's answer (and each follow-up's) in the wire form a worker sends."""
    agent = OfflineAgent()
    answers: dict[str, list[sse_wire.Wire]] = {}
    for question in QUESTIONS:
        state = ConversationState(conversation_id="c")
        for asked in (question, FOLLOW_UP):
            events = coalesce_tokens([ev async for ev in agent.stream(asked, state)])
            language = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in question) else "en"
            memo: dict[Any, str] = {}
            answers[question if asked == question else f"{question}|{FOLLOW_UP}"] = [
                sse_wire.encode(ev, language, memo) for ev in events
            ]
            state.record_turn(asked, events[-1].answer)  # type: ignore[union-attr]
    return answers


def replay_worker(pool: ProcessPoolAgent, answers: dict[str, list[sse_wire.Wire]]) -> None:
    """The app's pool with its worker replaced by the recorded answers: no process starts, each question gets
    its answer in wire form after one turn of the loop, decoded by the pool as a worker's reply is."""
    first_questions: dict[str, str] = {}  # conversation id -> its first question

    async def nothing() -> None:
        return None

    async def answer(question: str, state: ConversationState, language: Any) -> list[sse_wire.Wire]:
        await asyncio.sleep(0)
        cid = state.conversation_id or ""
        if question != FOLLOW_UP:
            first_questions[cid] = question
            return answers[question]
        return answers[f"{first_questions[cid]}|{FOLLOW_UP}"]

    pool.start = nothing  # type: ignore[method-assign]
    pool.stop = nothing  # type: ignore[method-assign]
    pool._answer = answer  # type: ignore[method-assign]


async def one_stream(app: Any, body: dict[str, Any]) -> str:
    payload = json.dumps(body).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat",
        "raw_path": b"/v1/chat",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"accept", b"text/event-stream"),
            (b"content-length", str(len(payload)).encode()),
            (b"connection", b"close"),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    complete = asyncio.Event()
    received = False
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await complete.wait()  # as uvicorn: the disconnect once the response is complete
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                complete.set()

    await app(scope, receive, send)
    body_bytes = b"".join(chunks)
    if b"event: done" not in body_bytes:
        raise RuntimeError(f"a stream ended without done: {body_bytes[:300]!r}")
    # the meta event's data, after any keep-alive comment (a slow run, e.g. under valgrind)
    meta = body_bytes.split(b"event: meta\r\ndata: ", 1)[1].split(b"\r\n", 1)[0]
    return json.loads(meta)["conversation_id"]


async def run(pairs: int, concurrency: int) -> None:
    answers = await recorded_answers()
    gc_cpu = [0.0, 0.0]  # seconds of CPU in collections, start of the current one

    def on_gc(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            gc_cpu[1] = time.thread_time()
        else:
            gc_cpu[0] += time.thread_time() - gc_cpu[1]

    with tempfile.TemporaryDirectory(prefix="vramwise-inprocess-") as tmp:
        settings = Settings(
            database_url=f"sqlite+aiosqlite:///{tmp}/chat.sqlite3", agent="offline", agent_processes=1
        )
        app = create_app(settings)
        replay_worker(app.state.agent, answers)  # the offline agent's ProcessPoolAgent
        async with app.router.lifespan_context(app):
            gc.callbacks.append(on_gc)
            try:
                start = time.thread_time()
                for _ in range(pairs):
                    ids = await asyncio.gather(
                        *(
                            one_stream(app, {"message": QUESTIONS[i % len(QUESTIONS)]})
                            for i in range(concurrency)
                        )
                    )
                    await asyncio.gather(
                        *(one_stream(app, {"message": FOLLOW_UP, "conversation_id": cid}) for cid in ids)
                    )
                cpu = time.thread_time() - start
            finally:
                gc.callbacks.remove(on_gc)
    streams = 2 * pairs * concurrency
    print(
        f"{streams} streams ({concurrency} concurrent, {pairs} pair(s) of rounds): "
        f"{cpu * 1e6 / streams:.0f} us CPU per stream, of which garbage collection {gc_cpu[0] * 1e6 / streams:.0f} us"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3, help="pairs of rounds: new questions, then follow-ups")
    p.add_argument("--concurrency", type=int, default=200)
    args = p.parse_args(argv)
    if not 1 <= args.pairs <= 50 or not 1 <= args.concurrency <= 2000:
        print("chat_inprocess: --pairs must be 1-50 and --concurrency 1-2000", file=sys.stderr)
        return 2
    try:
        import uvloop

        uvloop.run(run(args.pairs, args.concurrency))
    except ImportError:
        asyncio.run(run(args.pairs, args.concurrency))
    return 0


if __name__ == "__main__":
    sys.exit(main())
