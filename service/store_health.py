"""The conversation store as part of health: a watch that notices a lost or read-only store within a second,
says so loudly in the log, and has writes answered 503 until it is back.

Deleting the SQLite file under a running service went unnoticed: SQLite keeps writing to the deleted inode,
so chats "succeeded", `/readyz` stayed 200, nothing was logged, and a restart found every conversation gone.
`check` (run every WATCH_INTERVAL_S, and by `/readyz` itself) fails when:
- the SQLite file is gone, replaced by another file, or can no longer be opened for writing (read-only,
  immutable);
- a real read of the conversations table does not answer within READ_TIMEOUT_S, or PostgreSQL says the
  session is read-only (a standby after a fail-over).
While it fails, `StoreWriteGuard` answers every request that writes (any method but GET/HEAD/OPTIONS, except
`POST /v1/estimate`, which stores nothing) with 503, `Retry-After` and the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.errors import ApiError, error_response
from service.store import ConversationStore

log = logging.getLogger("vramwise.store")

WATCH_INTERVAL_S = 1.0
READ_TIMEOUT_S = 10.0  # generous: a store busy under load is slow, not lost
RETRY_AFTER_S = 5
READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
STORELESS_PATHS = frozenset({"/v1/estimate", "/healthz", "/readyz"})


def sqlite_path(database_url: str) -> Path | None:
    """The SQLite file of the URL, or None (PostgreSQL, in-memory SQLite)."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(str(url.database)).resolve()


def _in_memory(database_url: str) -> bool:
    url = make_url(database_url)
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


class StoreHealth:
    """What is wrong with the store now (`problem`, None when it is well), kept up to date by a watch."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store
        self.problem: str | None = None
        self._path = sqlite_path(store.database_url)
        self._identity: tuple[int, int] | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._path is not None:
            with contextlib.suppress(OSError):
                stat = self._path.stat()
                self._identity = (stat.st_dev, stat.st_ino)
        if not _in_memory(self.store.database_url):  # one shared connection: /readyz looks, the watch not
            self._task = asyncio.create_task(self._watch(), name="store-health")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None

    async def check(self) -> str | None:
        """Look now; log a change of state; return the problem (None: well)."""
        problem = self._file_problem() or await self._read_problem()
        if problem and problem != self.problem:
            log.error(
                "CONVERSATION STORE LOST: %s. Writes are answered 503 until it is back; nothing asked now "
                "can be stored. Restore the database (VRAMWISE_DATABASE_URL) and restart the service.",
                problem,
            )
        elif problem is None and self.problem is not None:
            log.warning("conversation store answers again; writes are accepted")
        self.problem = problem
        return problem

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            try:
                await self.check()
            except Exception:  # the watch must outlive any one look
                log.exception("the store's health check failed")

    def _file_problem(self) -> str | None:
        if self._path is None:
            return None
        try:
            stat = self._path.stat()
        except FileNotFoundError:
            return f"the SQLite file {self._path.name} was deleted"
        except OSError as exc:
            return f"the SQLite file {self._path.name} cannot be read ({exc.strerror})"
        if self._identity is not None and (stat.st_dev, stat.st_ino) != self._identity:
            return f"the SQLite file {self._path.name} was replaced by another file"
        try:
            os.close(os.open(self._path, os.O_RDWR))
        except OSError as exc:
            return f"the SQLite file {self._path.name} cannot be written ({exc.strerror})"
        return None

    async def _read_problem(self) -> str | None:
        try:
            async with asyncio.timeout(READ_TIMEOUT_S), self.store.engine.connect() as conn:
                await conn.execute(text("SELECT count(*) FROM (SELECT id FROM conversations LIMIT 1) AS one"))
                if conn.dialect.name == "postgresql":
                    read_only = await conn.scalar(text("SELECT current_setting('transaction_read_only')"))
                    if read_only == "on":
                        return "the database is read-only (a standby?)"
        except TimeoutError:
            return f"the database did not answer a read within {READ_TIMEOUT_S:.0f} s"
        except Exception as exc:
            return f"the database refused a read ({(str(exc).splitlines() or [type(exc).__name__])[0][:200]})"
        return None


class StoreWriteGuard:
    """503 for a request that would write while the store is lost (`StoreHealth.problem`): no I/O per request."""

    def __init__(self, app: ASGIApp, health: StoreHealth) -> None:
        self.app = app
        self.health = health

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        problem = self.health.problem
        if (
            problem is None
            or scope["type"] != "http"
            or scope["method"] in READ_ONLY_METHODS
            or scope["path"] in STORELESS_PATHS
        ):
            await self.app(scope, receive, send)
            return
        err = ApiError(
            503,
            f"the conversation store is unavailable: {problem}",
            field=None,
            accepted=f"retry once GET /readyz answers 200 (Retry-After: {RETRY_AFTER_S} s)",
            code="store_unavailable",
        )
        response = error_response(Request(scope), err)
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
        await response(scope, receive, send)
