"""Bounded history: a stored conversation read a page at a time, and the cap on turns per conversation.

`GET /v1/conversations/{id}` returned every turn (16 MB at 2,001 turns). Now it returns at most `limit`
turns (default 100, at most 500), oldest first, from after `cursor` (the `next_cursor` of the page before:
the last turn's id, an opaque string to clients), with `total_turns` and `next_cursor` (None on the last
page). A conversation takes at most `VRAMWISE_MAX_TURNS` questions (default 500); one more is refused with
409 `conversation_full`, saying to start a new conversation (its scenario carries over when restated).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from service.api.errors import ApiError
from service.db_models import ConversationRow, TurnRow
from service.store import (
    ConversationStore,
    StoredConversation,
    StoredTurn,
    _scenario_from_json,
    _shown_status,
    _stale_before,
    _storable_id,
    _utc,
    visible,
)

DEFAULT_PAGE = 100
MAX_PAGE = 500
_COUNT = "SELECT count(*) FROM turns WHERE conversation_id = ?"  # ix_turns_conversation_id: a range count
CURSOR_ACCEPTED = "the next_cursor of the page before (digits), or none for the first page"


class ConversationPage(StoredConversation):
    """One page of a stored conversation's turns (oldest first)."""

    total_turns: int
    next_cursor: str | None = None


def parse_cursor(cursor: str | None) -> int:
    """The turn id a page starts after (0: the first page); 422 for anything but digits."""
    if cursor is None or cursor == "":
        return 0
    if not cursor.isdigit() or len(cursor) > 18:
        raise ApiError(
            422, f"cursor {cursor[:40]!r} is not a page cursor", field="cursor", accepted=CURSOR_ACCEPTED
        )
    return int(cursor)


async def conversation_page(
    store: ConversationStore, conversation_id: str, owner: str | None, limit: int, after: int
) -> ConversationPage | None:
    """The page of `limit` turns after turn id `after`; None when unknown or another key's."""
    if not _storable_id(conversation_id):
        return None
    async with store.engine.connect() as conn:
        head = (
            await conn.execute(select(ConversationRow.__table__).where(ConversationRow.id == conversation_id))
        ).first()
        if head is None or not visible(head.owner, owner):
            return None
        total = await turn_count_on(conn, conversation_id)
        rows = (
            await conn.execute(
                select(TurnRow.__table__)
                .where(TurnRow.conversation_id == conversation_id, TurnRow.id > after)
                .order_by(TurnRow.id)
                .limit(limit + 1)
            )
        ).all()
    stale_before = _stale_before()
    shown = rows[:limit]
    return ConversationPage(
        conversation_id=head.id,
        language=head.language,
        scenario=_scenario_from_json(head.scenario_json),
        turns=[
            StoredTurn(
                question=t.question,
                answer=t.answer,
                language=t.language,
                agent=t.agent,
                scenario=_scenario_from_json(t.scenario_json),
                created_at=_utc(t.created_at),
                status=_shown_status(t.status, _utc(t.created_at), stale_before),
            )
            for t in shown
        ],
        created_at=_utc(head.created_at),
        updated_at=_utc(head.updated_at),
        total_turns=total,
        next_cursor=str(shown[-1].id) if len(rows) > limit else None,
    )


async def turn_count_on(conn, conversation_id: str) -> int:  # type: ignore[no-untyped-def]
    count = await conn.scalar(
        select(func.count()).select_from(TurnRow.__table__).where(TurnRow.conversation_id == conversation_id)
    )
    return int(count or 0)


class TurnCap:
    """At most `max_turns` questions per conversation (VRAMWISE_MAX_TURNS). For a plain SQLite file the
    count is read with stdlib sqlite3 on the loop through one read-only connection kept open (an index
    range count: microseconds, where a round trip through aiosqlite's thread cost ~0.7 ms of the serving
    process per follow-up in benchmarks/load_chat.py, and a new connection per count ~1 ms); other
    databases, or SQLite refusing (a lock during WAL recovery), go through the store's engine."""

    def __init__(self, store: ConversationStore, max_turns: int) -> None:
        self.store = store
        self.max_turns = max_turns
        self._conn: sqlite3.Connection | None = None

    def open(self) -> None:
        url = make_url(self.store.database_url)
        if url.get_backend_name() != "sqlite" or url.query or url.database in (None, "", ":memory:"):
            return
        if str(url.database).startswith("file:"):
            return
        # read-only URI: a missing file is an error, never created; check_same_thread=False: close() may
        # run on another thread (a test's loop shutting down)
        uri = f"{Path(str(url.database)).resolve().as_uri()}?mode=ro"
        self._conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout=0")  # never wait for a lock on the serving loop

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    async def check_room(self, conversation_id: str) -> None:
        """409 when the conversation already holds `max_turns` turns."""
        count = None
        if self._conn is not None:
            try:
                count = int(self._conn.execute(_COUNT, (conversation_id,)).fetchone()[0])
            except sqlite3.Error:
                count = None
        if count is None:
            async with self.store.engine.connect() as conn:
                count = await turn_count_on(conn, conversation_id)
        if count >= self.max_turns:
            raise ApiError(
                409,
                f"this conversation already holds {count} questions, the most one keeps (VRAMWISE_MAX_TURNS)",
                field="conversation_id",
                accepted="a new conversation: omit conversation_id (restate the job: it does not carry over)",
                code="conversation_full",
            )
