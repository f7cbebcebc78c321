"""`ThreadedAgent`: an agent run on its own event loop in one background thread.

For the LLM agent (mostly waiting on the network, with estimator calls in between): its work and
its HTTP clients live on a dedicated loop, so a slow tool call never stalls the serving loop.
Events cross back through an asyncio queue, so token streaming is preserved; text already waiting
is coalesced into one event; a consumer that stops early (client gone, terminal event) cancels the
agent's task. One thread per wrapped agent, started lazily, stopped by the app's lifespan.
(The CPU-bound offline agent runs in worker processes instead: agent_pool.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from concurrent.futures import Future
from dataclasses import dataclass

from service.agent.base import Agent, ConversationState
from service.agent.events import AgentEvent, Language, TokenEvent


@dataclass
class _Failure:
    exc: BaseException


_END = object()


class ThreadedAgent:
    """Implements the Agent protocol by running `agent` on a background thread's event loop."""

    def __init__(self, agent: Agent, thread_name: str = "vramwise-agent") -> None:
        self.agent = agent
        self.name = agent.name
        self._thread_name = thread_name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _ensure_started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._thread_name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    async def start(self) -> None:
        """Nothing to do up front: the thread starts with the first question."""

    async def stop(self) -> None:
        await asyncio.to_thread(self._stop)

    def _stop(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def _shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await loop.shutdown_asyncgens()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_shutdown(), loop).result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()

    async def stream(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> AsyncIterator[AgentEvent]:
        """The wrapped agent's stream, run on the agent thread, consumed on the caller's loop."""
        agent = self.agent
        worker = self._ensure_started()
        caller = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()

        def put(item: object) -> None:
            with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody listens
                caller.call_soon_threadsafe(queue.put_nowait, item)

        async def pump() -> None:
            try:
                async for ev in agent.stream(question, state, language):
                    put(ev)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                put(_Failure(exc))
            finally:
                put(_END)

        future: Future[None] = asyncio.run_coroutine_threadsafe(pump(), worker)
        try:
            while True:
                item = await queue.get()
                # coalesce text already waiting: one SSE write instead of dozens on a busy server
                while isinstance(item, TokenEvent) and not queue.empty():
                    nxt = queue.get_nowait()
                    if not isinstance(nxt, TokenEvent):
                        yield item
                        item = nxt
                        break
                    item = TokenEvent(text=item.text + nxt.text)
                if item is _END:
                    return
                if isinstance(item, _Failure):
                    raise item.exc
                yield item  # type: ignore[misc]
        finally:
            if not future.done():
                future.cancel()
