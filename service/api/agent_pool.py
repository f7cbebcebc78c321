"""`ProcessPoolAgent`: the offline agent run in worker processes.

The offline agent is pure CPU (parse, estimate, planner search: milliseconds per question). Run
in the serving process it would compete with the event loop for the GIL, and every other
stream's first event would wait behind it. In worker processes it uses the other cores and the
serving loop only moves bytes. A question is answered whole in a worker (the offline agent never
waits on I/O); its events come back as JSON and are re-streamed, with the text coalesced into
pieces of up to `TOKEN_PIECE_CHARS` so a long answer is a handful of SSE writes, not dozens.

Workers are forked when the app starts, before the store opens its connections (the serving
process is then single-threaded, so forking is safe); they inherit the imported agent and
estimator, so starting them takes milliseconds and never re-imports the caller's `__main__`.
Each builds its own `OfflineAgent` once (the pool's initializer).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from pydantic import TypeAdapter

from service.agent.base import Agent, ConversationState
from service.agent.events import AgentEvent, Language, TokenEvent

log = logging.getLogger(__name__)

TOKEN_PIECE_CHARS = 1024

_EVENT = TypeAdapter(AgentEvent)

# ---- inside a worker process -------------------------------------------------------------------------
# One agent and one event loop per worker process, made by the pool's initializer (process-local).
_worker: dict[str, Any] = {}


def _init_worker(settings_data: dict[str, Any]) -> None:
    from service.agent.factory import build_agent
    from service.settings import Settings

    _worker["agent"] = build_agent(Settings(**settings_data), force_offline=True)
    _worker["loop"] = asyncio.new_event_loop()


def _answer(question: str, state_json: str, language: Language | None) -> list[str]:
    """One question answered in the worker: its events as JSON strings."""
    agent: Agent = _worker["agent"]
    state = ConversationState.model_validate_json(state_json)

    async def collect() -> list[str]:
        return [ev.model_dump_json() async for ev in agent.stream(question, state, language)]

    return _worker["loop"].run_until_complete(collect())


def _ready() -> int:
    return os.getpid()


# ---- in the serving process ----------------------------------------------------------------------------
def coalesce_tokens(events: list[AgentEvent], max_chars: int = TOKEN_PIECE_CHARS) -> list[AgentEvent]:
    """Consecutive text events merged into pieces of at most `max_chars` (a longer single event stays whole)."""
    out: list[AgentEvent] = []
    for ev in events:
        last = out[-1] if out else None
        if (
            isinstance(ev, TokenEvent)
            and isinstance(last, TokenEvent)
            and len(last.text) + len(ev.text) <= max_chars
        ):
            out[-1] = TokenEvent(text=last.text + ev.text)
        else:
            out.append(ev)
    return out


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

    async def stop(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)

    async def stream(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> AsyncIterator[AgentEvent]:
        if self._pool is None:
            self._pool = self._new_pool()
        loop = asyncio.get_running_loop()
        try:
            raw = await loop.run_in_executor(self._pool, _answer, question, state.model_dump_json(), language)
        except BrokenProcessPool:
            log.error("an offline agent worker died; starting a new pool")
            self._pool = self._new_pool()
            raise
        for ev in coalesce_tokens([_EVENT.validate_json(r) for r in raw]):
            yield ev
