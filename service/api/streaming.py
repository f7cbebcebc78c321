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
from collections.abc import AsyncIterator
from typing import TypeVar

T = TypeVar("T")

_END = object()


async def ready_batches(source: AsyncIterator[T], window_s: float = 0.0) -> AsyncIterator[list[T]]:
    """Items of `source` in lists: everything that was ready when the consumer asked again, and with
    `window_s` > 0 everything that arrived up to `window_s` after the batch's first item (or until
    the source ended or raised)."""
    queue: asyncio.Queue[object] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for item in source:
                queue.put_nowait(item)
        except BaseException as exc:  # re-raised on the consumer's side
            queue.put_nowait(_Raised(exc))
        finally:
            queue.put_nowait(_END)

    producer = asyncio.create_task(pump())
    try:
        while True:
            items = [await queue.get()]
            while not queue.empty():
                items.append(queue.get_nowait())
            if window_s > 0 and not _final(items[-1]):
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(window_s):
                        while not _final(items[-1]):
                            items.append(await queue.get())
                while not queue.empty():
                    items.append(queue.get_nowait())
            batch = [i for i in items if i is not _END and not isinstance(i, _Raised)]
            if batch:
                yield batch  # type: ignore[misc]
            for i in items:
                if isinstance(i, _Raised):
                    raise i.exc
            if items[-1] is _END:
                return
    finally:
        if not producer.done():
            producer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await producer


def _final(item: object) -> bool:
    return item is _END or isinstance(item, _Raised)


class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
