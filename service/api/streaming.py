"""Group what a stream has ready, so a burst of events is one network write, not one per event.

On a busy 2-core box each `send()` costs a syscall and a trip through the ASGI server; an answer
that arrives at once (the offline agent answers in milliseconds) would otherwise cost a dozen
writes. With `window_s`, a batch also waits up to that long after its first item for more (an
LLM's tokens then go out in chunks of that duration, and an answer and its `done`, sent once the
turn is stored, share one write); without it, items that arrive slowly go out one by one.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from typing import Any, Generic, TypeVar

from starlette.responses import Response

T = TypeVar("T")


async def ready_batches(source: AsyncIterator[T], window_s: float = 0.0) -> AsyncIterator[list[T]]:
    """Items of `source` in lists: everything that was ready when the consumer asked again, and with
    `window_s` > 0 everything that arrived up to `window_s` after the batch's first item (or until
    the source ended or raised)."""
    batcher: _Batcher[T] = _Batcher()
    producer = asyncio.create_task(batcher.pump(source))
    try:
        while True:
            if not batcher.ready and not batcher.ended:
                await batcher.wait(for_item=True)
            if window_s > 0 and not batcher.ended:
                timer = asyncio.get_running_loop().call_later(window_s, batcher.wake)
                try:
                    await batcher.wait(for_item=False)  # the source's end or the window's, whichever first
                finally:
                    timer.cancel()
            batch = batcher.take()
            if batch:
                yield batch
            if batcher.ended:
                if batcher.error is not None:
                    raise batcher.error
                return
    finally:
        if not producer.done():
            producer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await producer


class _Batcher(Generic[T]):
    """What a producer task has read from the source and not yet handed out, and the consumer's one waiter:
    a list and a future where an asyncio.Queue and an asyncio.timeout cost a future, a wake-up and a
    timer handle per item (a chat stream's answer is ~9 events that arrive at once)."""

    def __init__(self) -> None:
        self.ready: list[T] = []
        self.ended = False
        self.error: BaseException | None = None  # what the source raised
        self._waiter: asyncio.Future[None] | None = None
        self._wake_on_item = False

    async def pump(self, source: AsyncIterator[T]) -> None:
        try:
            async for item in source:
                self.ready.append(item)
                if self._wake_on_item:
                    self.wake()
        except BaseException as exc:  # re-raised on the consumer's side
            self.error = exc
        finally:
            self.ended = True
            self.wake()

    async def wait(self, *, for_item: bool) -> None:
        """Until `wake`: the next item (`for_item`), or the source's end (always)."""
        self._wake_on_item = for_item
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def take(self) -> list[T]:
        batch, self.ready = self.ready, []
        return batch


class LastChunk(bytes):
    """The stream's last chunk (bytes, marked): `EventStream` sends it with the end of the body, one write
    instead of two. Whatever the source yields after it is not sent."""


PING = b": ping\r\n\r\n"  # an SSE comment: keeps proxies from closing an idle stream, ignored by clients


@functools.lru_cache(maxsize=32)
def _raw_headers(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[bytes, bytes], ...]:
    """An event stream's header lines with the route's `headers` (a route passes the same few on every
    request: encoded once each)."""
    merged = {
        "Cache-Control": "no-store",
        **dict(headers),
        "Connection": "keep-alive",
        "X-Accel-Buffering": "no",
    }
    return (
        (b"content-type", b"text/event-stream; charset=utf-8"),
        *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in merged.items()),
    )


class EventStream(Response):
    """A `text/event-stream` ASGI response over an async iterator of encoded SSE bytes.

    What sse_starlette's EventSourceResponse gave the chat routes, at a fraction of its per-stream
    cost (a task group of four tasks and a timeout scope around every send): one task waiting for the
    client to go away (it cancels the stream, which closes the agent's generator), a keep-alive
    comment after `ping_s` seconds without data (a timer, a task only when it fires), and the chunks
    written as they come. Same headers as sse_starlette's defaults.
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        *,
        ping_s: float = 15.0,
        headers: dict[str, str] | None = None,
        status_code: int = 200,
    ) -> None:
        self.chunks = chunks
        self.ping_s = ping_s
        self.status_code = status_code
        self.background = None
        self.body = b""
        self.raw_headers = list(_raw_headers(tuple((headers or {}).items())))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        state = {"gone": False, "ended": False, "last": loop.time()}
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            if state["ended"]:  # the body is complete (the server says "disconnect" then): nothing to stop
                return
            state["gone"] = True
            task.cancel()

        pinger: asyncio.Task[None] | None = None
        timer: asyncio.TimerHandle | None = None

        async def ping() -> None:
            await send({"type": "http.response.body", "body": PING, "more_body": True})

        def due() -> None:
            nonlocal pinger, timer
            idle = loop.time() - state["last"]
            if idle >= self.ping_s:
                if pinger is None or pinger.done():
                    pinger = loop.create_task(ping())
                state["last"] = loop.time()
                idle = 0.0
            timer = loop.call_later(self.ping_s - idle, due)

        listener = loop.create_task(listen())
        if self.ping_s > 0:
            timer = loop.call_later(self.ping_s, due)
        ended = False
        try:
            async with contextlib.aclosing(self.chunks) as chunks:  # type: ignore[type-var]
                async for chunk in chunks:
                    if ended:
                        continue
                    state["last"] = loop.time()
                    ended = state["ended"] = isinstance(chunk, LastChunk)
                    if ended:  # no keep-alive comment after the end of the body
                        if timer is not None:
                            timer.cancel()
                        if pinger is not None and not pinger.done():
                            pinger.cancel()
                    await send({"type": "http.response.body", "body": chunk, "more_body": not ended})
        except asyncio.CancelledError:
            if not state["gone"]:
                raise
            task.uncancel()  # the client went away: nothing more to send
            return
        finally:
            listener.cancel()
            if timer is not None:
                timer.cancel()
            if pinger is not None and not pinger.done():
                pinger.cancel()
        if not ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
