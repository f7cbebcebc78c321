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
Each builds its own `OfflineAgent` once (the pool's initializer).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from pydantic import TypeAdapter

from service.agent.base import Agent, ConversationState
from service.agent.events import AgentEvent, Language
from service.api import sse_wire

log = logging.getLogger(__name__)

TOKEN_PIECE_CHARS = 1024
PR_SET_PDEATHSIG = 1  # linux/prctl.h: signal sent to this process when its parent dies

_EVENT = TypeAdapter(AgentEvent)

# ---- inside a worker process -------------------------------------------------------------------------
# One agent and one event loop per worker process, made by the pool's initializer (process-local).
_worker: dict[str, Any] = {}


def _init_worker(settings_data: dict[str, Any]) -> None:
    from service.agent.factory import build_agent
    from service.settings import Settings

    _detach_from_server_signals()

    _worker["agent"] = build_agent(Settings(**settings_data), force_offline=True)
    _worker["loop"] = asyncio.new_event_loop()


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


def _answer(question: str, state: ConversationState, language: Language | None) -> list[sse_wire.Wire]:
    """One question answered in the worker: its events, text coalesced, in wire form (sse_wire.encode)."""
    from service.agent.offline.language import detect_language

    agent: Agent = _worker["agent"]

    async def collect() -> list[AgentEvent]:
        return [ev async for ev in agent.stream(question, state, language)]

    events = coalesce_tokens(_worker["loop"].run_until_complete(collect()))
    # the chat stream's display language: the agents' own rule (stated, else the question's, else the conversation's)
    display_language = language or detect_language(question, default=state.language or "en")
    memo: dict[Any, str] = {}
    return [sse_wire.encode(ev, display_language, memo) for ev in events]


def _ready() -> int:
    return os.getpid()


# ---- in the serving process ----------------------------------------------------------------------------
def coalesce_tokens(events: list[AgentEvent], max_chars: int = TOKEN_PIECE_CHARS) -> list[AgentEvent]:
    """Consecutive text events merged into pieces of at most `max_chars` (a longer single event stays whole)."""
    return sse_wire.merge_tokens(events, max_chars)


class ProcessPoolAgent:
    """Implements the Agent protocol with the offline agent answering in worker processes."""

    name = "offline"

    def __init__(self, settings_data: dict[str, Any], workers: int | None = None) -> None:
        self._settings_data = settings_data
        self.workers = workers or max(1, os.cpu_count() or 1)
        self._pool: ProcessPoolExecutor | None = None

    def _new_pool(self) -> ProcessPoolExecutor:
        ctx = multiprocessing.get_context("fork")
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(self._settings_data,),
        )

    async def start(self) -> None:
        """Start the workers and wait until each has built its agent (no cold first question)."""
        import tools.estimator  # noqa: F401 -- imported once here, inherited by the forked workers
        from service.agent import offline  # noqa: F401

        self._pool = self._new_pool()
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._pool, _ready) for _ in range(self.workers)))

    def worker_pids(self) -> list[int]:
        """The worker processes now serving (diagnostics, tests)."""
        processes = getattr(self._pool, "_processes", None) or {}
        return sorted(processes)

    async def stop(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)

    async def stream(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> AsyncIterator[AgentEvent]:
        # the state crosses as a pickle (pydantic restores a pickled model without validating it again)
        wires = await self._answer(question, state, language)
        for wire in wires:
            yield sse_wire.decode(wire, _EVENT)

    async def _answer(
        self, question: str, state: ConversationState, language: Language | None
    ) -> list[sse_wire.Wire]:
        """Run in a worker; if the pool broke (a worker died), start a new one and ask once more:
        the offline agent is deterministic and has no side effects, so a retry is safe."""
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            pool = self._pool or self._replace_pool(None)
            try:
                return await loop.run_in_executor(pool, _answer, question, state, language)
            except BrokenProcessPool:
                log.error("an offline agent worker died (attempt %d); starting a new pool", attempt)
                self._replace_pool(pool)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _replace_pool(self, broken: ProcessPoolExecutor | None) -> ProcessPoolExecutor:
        """A fresh pool, made once however many streams saw the same broken one."""
        if self._pool is None or self._pool is broken:
            if broken is not None:
                broken.shutdown(wait=False, cancel_futures=True)
            self._pool = self._new_pool()
        return self._pool
