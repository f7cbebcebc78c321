"""What the Slack channel keeps in the database (the same one as the conversations: SQLite or PostgreSQL).

Three tables of its own (created on start, next to the conversation store's; nothing of that store
changes), so that every replica behind a load balancer sees the same:
- `slack_events`: each Slack request that asks a question, keyed by its `event_id` (slash commands by
  their `trigger_id`), with the question, stored before the agent runs. Slack retries a delivery
  (`X-Slack-Retry-Num`) with the same `event_id`: the insert of a key already there does nothing,
  so only the first delivery gets an answer, whichever replica it reaches.
- `slack_threads`: `team:channel:thread_ts` (or a DM channel, or a user's `/vram` in a channel) ->
  the conversation id of the store, so a follow-up in a thread continues that conversation.
- `slack_answers`: one row per answer posted with a "Show formulas" button (the button's value is the
  row's id): the Estimate and language the formulas are rendered from when the button is pressed.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Column, DateTime, MetaData, String, Table, Text, delete, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from service.store import create_schema, engine_for
from tools.result import Estimate

log = logging.getLogger(__name__)

KEY_CHARS = 300
EVENTS_KEPT = timedelta(days=2)  # Slack retries within minutes; older keys are pruned on start
SCHEMA_LOCK_KEY = 0x534C4B  # pg_advisory_xact_lock key ("SLK"), serialising CREATE TABLE across replicas

metadata = MetaData()

slack_events = Table(
    "slack_events",
    metadata,
    Column("key", String(KEY_CHARS), primary_key=True),
    Column("question", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

slack_threads = Table(
    "slack_threads",
    metadata,
    Column("key", String(KEY_CHARS), primary_key=True),
    Column("conversation_id", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

slack_answers = Table(
    "slack_answers",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("conversation_id", String(200), nullable=False),
    Column("language", String(8), nullable=False),
    Column("estimate_json", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)


@dataclass(frozen=True)
class StoredAnswer:
    conversation_id: str
    language: str
    estimate: Estimate


def _now() -> datetime:
    return datetime.now(UTC)


def _key(value: str) -> str:
    return value.replace("\x00", "")[:KEY_CHARS]


class SlackStore:
    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self._engine: AsyncEngine | None = None

    async def open(self) -> None:
        self._engine = engine_for(self.database_url)

        async def build(conn: AsyncConnection) -> None:
            await conn.run_sync(metadata.create_all)

        await create_schema(self._engine, build, lock_key=SCHEMA_LOCK_KEY, what="the Slack tables")
        async with self._engine.begin() as conn:
            await conn.execute(delete(slack_events).where(slack_events.c.created_at < _now() - EVENTS_KEPT))

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
        self._engine = None

    def _begin(self):  # type: ignore[no-untyped-def]
        if self._engine is None:
            raise RuntimeError("Slack store is not open")
        return self._engine.begin()

    async def _insert_new(self, table: Table, row: dict[str, object]) -> bool:
        """Insert `row` unless its key exists; True when this call inserted it (atomic on every replica)."""
        async with self._begin() as conn:
            dialect = {"postgresql": postgresql, "sqlite": sqlite}.get(conn.dialect.name)
            if dialect is not None:
                result = await conn.execute(dialect.insert(table).on_conflict_do_nothing(), [row])
                return bool(result.rowcount)
        try:  # other dialects: the primary key refuses the second insert
            async with self._begin() as conn:
                await conn.execute(insert(table), [row])
            return True
        except IntegrityError:
            return False

    async def claim_event(self, key: str, question: str) -> bool:
        """Store the question of one Slack delivery; False when that event was already received."""
        return await self._insert_new(
            slack_events,
            {"key": _key(key), "question": question.replace("\x00", "\ufffd"), "created_at": _now()},
        )

    async def conversation_for(self, key: str) -> str:
        """The conversation id of a thread (created on first use; the same on every replica)."""
        key = _key(key)
        await self._insert_new(
            slack_threads, {"key": key, "conversation_id": uuid.uuid4().hex, "created_at": _now()}
        )
        async with self._begin() as conn:
            found = await conn.scalar(
                select(slack_threads.c.conversation_id).where(slack_threads.c.key == key)
            )
        assert found is not None
        return str(found)

    async def link(self, key: str, conversation_id: str) -> None:
        """Make thread `key` continue `conversation_id` (unless it already has a conversation)."""
        await self._insert_new(
            slack_threads, {"key": _key(key), "conversation_id": conversation_id, "created_at": _now()}
        )

    async def save_answer(self, conversation_id: str, language: str, estimate: Estimate) -> str:
        answer_id = uuid.uuid4().hex
        async with self._begin() as conn:
            await conn.execute(
                insert(slack_answers),
                [
                    {
                        "id": answer_id,
                        "conversation_id": conversation_id,
                        "language": language,
                        "estimate_json": estimate.model_dump_json(),
                        "created_at": _now(),
                    }
                ],
            )
        return answer_id

    async def answer(self, answer_id: str) -> StoredAnswer | None:
        async with self._begin() as conn:
            row = (
                await conn.execute(
                    select(
                        slack_answers.c.conversation_id,
                        slack_answers.c.language,
                        slack_answers.c.estimate_json,
                    ).where(slack_answers.c.id == answer_id[:32])
                )
            ).first()
        if row is None:
            return None
        return StoredAnswer(
            row.conversation_id, row.language, Estimate.model_validate_json(row.estimate_json)
        )
