"""`ProcessPoolAgent`: the offline agent run in worker processes.

The offline agent is pure CPU (parse, estimate, planner search: milliseconds per question). Run
in the serving process it would compete with the event loop for the GIL, and every other
stream's first event would wait behind it. In worker processes it uses the other cores and the
serving loop only moves bytes. A question is answered whole in a worker (the offline agent never
waits on I/O). The worker also coalesces the text into pieces of up to `TOKEN_PIECE_CHARS` (a long
answer is a handful of SSE events, not dozens) and encodes every event's SSE bytes, display panels
included, once (`service.api.sse_wire`): the serving process gets plain strings back, builds events
around them without validating them again, and only writes the bytes.

Workers are forked when the app starts, before the store opens its connections (the serving
process is then single-threaded, so forking is safe); they inherit the imported agent and
estimator, so starting them takes milliseconds and never re-imports the caller's `__main__`.
Each builds its own `OfflineAgent` once and runs at a lower CPU priority than the serving process.

Each worker talks to the serving loop over its own Unix socket pair: a question goes out as one
length-prefixed pickle written by the loop's transport, the answer comes back the same way and is
read by a protocol on the loop. No thread in the serving process takes part (concurrent.futures'
process pool moves every call through a manager thread, a feeder thread and locked queues: on a
2-core box each of those hand-offs is a GIL round trip). A question goes to the worker with the
fewest in flight; a worker that dies fails its questions, is replaced, and each is asked once more.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import logging
import multiprocessing
import os
import pickle
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from service.agent.base import ConversationState
from service.agent.events import AgentEvent, Language
from service.agent.offline.language import detect_language
from service.api import sse_wire
from service.observability.tracing import continued, flush_spans, span, trace_carrier

if TYPE_CHECKING:
    from service.agent.offline.agent import OfflineAgent

log = logging.getLogger(__name__)

TOKEN_PIECE_CHARS = 1024
PR_SET_PDEATHSIG = 1  # linux/prctl.h: signal sent to this process when its parent dies
WORKER_NICE = 5  # nice increment of a worker: below the serving process (idle cores are used all the same)
HEADER_BYTES = 4  # a frame: its length (big-endian), then a pickle
READ_BYTES = 1 << 16
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0

_EVENT = TypeAdapter(AgentEvent)

# ---- inside a worker process -------------------------------------------------------------------------
# One offline agent per worker process, made by the pool's initializer (process-local).
_worker: dict[str, Any] = {}


def _init_worker(settings_data: dict[str, Any]) -> None:
    from service.agent.factory import build_agent
    from service.settings import Settings

    _detach_from_server_signals()
    with contextlib.suppress(OSError):
        # below the serving loop: when the cores are busy, the streams' first events and bytes go out before
        # a worker's next answer (benchmarks/load_chat.py: first-event p99 lower at the same CPU per stream)
        os.nice(WORKER_NICE)

    _worker["agent"] = build_agent(Settings(**settings_data), force_offline=True)


def _detach_from_server_signals() -> None:
    """A forked worker inherits the server's signal handlers (uvicorn turns SIGTERM into "please
    exit", which a worker would ignore). Back to the defaults: SIGTERM ends the worker, Ctrl-C is
    left to the server (which shuts the pool down); on Linux the worker also dies with the server."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _answer(
    question: str, state: ConversationState, language: Language | None, trace: dict[str, str] | None = None
) -> list[sse_wire.Wire]:
    """One question answered in the worker: its events, text in pieces, in wire form (sse_wire.encode). The
    offline agent makes its text in pieces (`OfflineAgent.events`) and runs without an event loop. With
    `trace` (the asking request's trace context), its work is a span of that trace (and the estimator's,
    the planner's and a Hub look-up's spans under it: service/hub.py)."""
    agent: OfflineAgent = _worker["agent"]
    with continued(trace), span("offline agent") if trace else nullcontext():
        pieces = agent.events(question, state, language, piece_chars=TOKEN_PIECE_CHARS)
        events = coalesce_tokens(list(pieces))
    # the chat stream's display language: the agents' own rule (stated, else the question's, else the conversation's)
    display_language = language or detect_language(question, default=state.language or "en")
    memo: dict[Any, str] = {}
    return [sse_wire.encode(ev, display_language, memo) for ev in events]


def _frame(obj: object) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(HEADER_BYTES, "big") + data


def _frames(buffer: bytearray) -> list[Any]:
    """The whole frames at the start of `buffer`, unpickled and removed from it."""
    out: list[Any] = []
    start = 0
    while len(buffer) - start >= HEADER_BYTES:
        size = int.from_bytes(buffer[start : start + HEADER_BYTES], "big")
        end = start + HEADER_BYTES + size
        if end > len(buffer):
            break
        out.append(pickle.loads(buffer[start + HEADER_BYTES : end]))
        start = end
    del buffer[:start]
    return out


def _serve_worker(sock: socket.socket, settings_data: dict[str, Any], inherited: list[int]) -> None:
    """A worker process's life: build the agent, say ready, then answer each question it reads, in order,
    until the serving process closes its end."""
    for fd in inherited:  # the serving process's ends of the other workers' sockets
        with contextlib.suppress(OSError):
            os.close(fd)
    _init_worker(settings_data)
    buffer = bytearray()
    try:
        sock.sendall(_frame(("ready", os.getpid())))
        while data := sock.recv(READ_BYTES):
            buffer += data
            for request_id, question, state, language, *trace in _frames(buffer):
                try:
                    reply: tuple[Any, ...] = (request_id, True, _answer(question, state, language, *trace))
                except Exception as exc:  # the serving process logs it and answers with an error event
                    reply = (request_id, False, _picklable(exc))
                sock.sendall(_frame(reply))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the serving process closed its end first (it is stopping): nobody waits for the answer
    finally:
        flush_spans()  # a process of the pool ends without the interpreter's exit handlers


def _picklable(exc: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


# ---- in the serving process ----------------------------------------------------------------------------
def coalesce_tokens(events: list[AgentEvent], max_chars: int = TOKEN_PIECE_CHARS) -> list[AgentEvent]:
    """Consecutive text events merged into pieces of at most `max_chars` (a longer single event stays whole)."""
    return sse_wire.merge_tokens(events, max_chars)


class WorkerDied(RuntimeError):
    """The worker answering a question exited (killed, out of memory) before it answered."""


class _Worker(asyncio.Protocol):
    """The serving side of one worker: its process, the transport to its socket, its questions in flight."""

    def __init__(self, process: Any, on_lost: Any) -> None:
        self.process = process
        self.pid: int = process.pid
        self.transport: asyncio.Transport | None = None
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.alive = True
        self._buffer = bytearray()
        self._on_lost = on_lost

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        for message in _frames(self._buffer):
            if message[0] == "ready":
                if not self.ready.done():
                    self.ready.set_result(message[1])
                continue
            request_id, ok, value = message
            future = self.pending.pop(request_id, None)
            if future is None or future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.alive:  # already taken for lost (`exited`), before its socket's end was read
            return
        self.alive = False
        died = WorkerDied(f"offline agent worker {self.pid} exited")
        if not self.ready.done():
            self.ready.set_exception(died)
        for future in self.pending.values():
            if not future.done():
                future.set_exception(died)
        self.pending.clear()
        with contextlib.suppress(Exception):
            self.process.join(timeout=0)  # reap it if it has exited
        self._on_lost(self)

    def exited(self) -> bool:
        """Gone, or its process has exited though the loop has not read its socket's end yet (a killed worker
        is seen at once, not one event-loop turn later); such a worker is taken for lost now."""
        if self.alive and not self.process.is_alive():
            self.connection_lost(None)
            self.close()
        return not self.alive

    def ask(self, request_id: int, payload: tuple[Any, ...]) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if not self.alive or self.transport is None or self.transport.is_closing():
            future.set_exception(WorkerDied(f"offline agent worker {self.pid} is gone"))
            return future
        self.pending[request_id] = future
        self.transport.write(_frame((request_id, *payload)))
        return future

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class ProcessPoolAgent:
    """Implements the Agent protocol with the offline agent answering in worker processes."""

    name = "offline"

    def __init__(self, settings_data: dict[str, Any], workers: int | None = None) -> None:
        self._settings_data = settings_data
        self.workers = workers or max(1, os.cpu_count() or 1)
        self._pool: list[_Worker] = []
        self._ids = itertools.count()
        self._next = 0
        self._stopping = False
        self._spawning: asyncio.Lock | None = None

    async def start(self) -> None:
        """Start the workers and wait until each has built its agent (no cold first question)."""
        import tools.estimator  # noqa: F401 -- imported once here, inherited by the forked workers
        from service.agent import offline  # noqa: F401

        self._stopping = False
        started = [await self._spawn() for _ in range(self.workers)]
        async with asyncio.timeout(START_TIMEOUT_S):
            await asyncio.gather(*(w.ready for w in started))

    async def _spawn(self) -> _Worker:
        """Fork one worker and connect its socket to the loop."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # the child closes its copies of the serving ends (its own and the other workers'): each worker then
        # reads the end of its socket when the serving process closes it
        inherited = [ours.fileno()] + [
            w.transport.get_extra_info("socket").fileno() for w in self._pool if w.transport is not None
        ]
        process = multiprocessing.get_context("fork").Process(
            target=_serve_worker,
            args=(theirs, self._settings_data, inherited),
            name="vramwise-offline-agent",
            daemon=True,
        )
        try:
            process.start()
        finally:
            theirs.close()
        worker = _Worker(process, self._lost)
        await asyncio.get_running_loop().connect_accepted_socket(lambda: worker, sock=ours)
        self._pool.append(worker)
        return worker

    def _lost(self, worker: _Worker) -> None:
        if worker in self._pool:
            self._pool.remove(worker)
            if not self._stopping:
                log.error("offline agent worker %d exited; starting another", worker.pid)

    def worker_pids(self) -> list[int]:
        """The worker processes now serving (diagnostics, tests)."""
        return sorted(w.pid for w in list(self._pool) if not w.exited())

    async def stop(self) -> None:
        self._stopping = True
        workers, self._pool = self._pool, []
        for w in workers:
            w.close()  # the worker reads the end of its socket and exits
        await asyncio.to_thread(_join_all, [w.process for w in workers])

    async def stream(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> AsyncIterator[AgentEvent]:
        # the state crosses as a pickle (pydantic restores a pickled model without validating it again), without
        # its turns: the offline agent reads the conversation's id, language and scenario, never its history
        if state.turns:
            state = state.model_copy(update={"turns": []})
        # the request's trace context, when it is traced: the worker's spans join the request's trace
        carrier = trace_carrier()
        wires = await self._answer(question, state, language, *((carrier,) if carrier else ()))
        for wire in wires:
            yield sse_wire.decode(wire, _EVENT)

    async def _answer(
        self, question: str, state: ConversationState, language: Language | None, *trace: dict[str, str]
    ) -> list[sse_wire.Wire]:
        """Answered by the least busy worker; if it died first, it is replaced and the question asked again:
        the offline agent is deterministic and has no side effects, so a retry is safe. Up to one more try
        than there are workers: workers killed together (OOM killer, `kill` of the group) can each be taken
        for alive by one pick, before their process has exited, and each such try drops one of them."""
        attempts = self.workers + 1
        for attempt in range(1, attempts + 1):
            worker = await self._pick()
            try:
                return await worker.ask(next(self._ids), (question, state, language, *trace))
            except WorkerDied:
                log.error("an offline agent worker died (attempt %d of %d)", attempt, attempts)
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")

    async def _pick(self) -> _Worker:
        """The live worker with the fewest questions in flight (round robin among equals); dead ones are
        replaced first."""
        if self._stopping:
            raise RuntimeError("the offline agent pool is stopped")
        for w in list(self._pool):
            w.exited()  # an exited worker leaves the pool now and is replaced below
        if len(self._pool) < self.workers:
            self._spawning = self._spawning or asyncio.Lock()
            async with self._spawning:  # however many questions saw the loss, each worker is replaced once
                while len(self._pool) < self.workers and not self._stopping:
                    async with asyncio.timeout(START_TIMEOUT_S):
                        await (await self._spawn()).ready
        alive = [w for w in self._pool if w.alive]
        if not alive:
            raise WorkerDied("no offline agent worker is running")
        self._next = (self._next + 1) % len(alive)
        rotated = alive[self._next :] + alive[: self._next]
        return min(rotated, key=lambda w: len(w.pending))


def _join_all(processes: list[Any]) -> None:
    for p in processes:
        p.join(timeout=STOP_TIMEOUT_S)
        if p.is_alive():
            p.terminate()
            p.join(timeout=STOP_TIMEOUT_S)
