"""Interviews in the database: the same URL as the conversation and coach stores, tables of their own.

An interview keeps its owner (the SHA-256 digest of the API key that started it, None when keys are
off), language, level, model and card, every question asked (its point, whether it is a follow-up, the
stated scenario, quantity and expected figure, the answer and its grade) and, once finished, its
scorecard. SQLAlchemy Core over SQLite or PostgreSQL; the tables are created on open.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    insert,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from service.coach.table_store import TableStore, next_position, utc_now

metadata = MetaData()
SCHEMA_LOCK_KEY = 0x56524149  # pg_advisory_xact_lock key ("VRAI") serialising the interview tables' creation

interviews = Table(
    "coach_interviews",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("owner", String(64), nullable=True, index=True),
    Column("language", String(8), nullable=False),
    Column("level", Integer, nullable=False),
    Column("setting", JSON, nullable=False),  # the model and card (arc.Setting)
    Column("scorecard", JSON, nullable=True),  # set when the last point closes
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

turns = Table(
    "coach_interview_turns",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("interview_id", String(64), ForeignKey("coach_interviews.id", ondelete="CASCADE"), index=True),
    Column("position", Integer, nullable=False),
    Column("point", String(40), nullable=False),  # the arc's point (its topic)
    Column("follow_up", Integer, nullable=False),  # 0 for the point's question, 1 and 2 for follow-ups
    Column("language", String(8), nullable=False),
    Column("text", Text, nullable=False),
    Column("quantity", String(120), nullable=False),
    Column("spec", JSON, nullable=False),  # QuestionSpec fields
    Column("expected", JSON, nullable=False),
    Column("answer", Text, nullable=True),
    Column("given", JSON, nullable=True),
    Column("correct", Boolean, nullable=True),
    Column("error_pct", Float, nullable=True),
    Column("feedback", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("answered_at", DateTime(timezone=True), nullable=True),
)

# a chat thread (Slack "team:channel:thread_ts") where an interview runs -> the interview
threads = Table(
    "coach_interview_threads",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("interview_id", String(64), ForeignKey("coach_interviews.id", ondelete="CASCADE")),
    Column("created_at", DateTime(timezone=True), nullable=False),
)


class InterviewStore(TableStore):
    """Interviews and their questions; `open()` creates the tables, `close()` releases the engine."""

    name = "interview"
    lock_key = SCHEMA_LOCK_KEY
    json_columns = ("setting", "scorecard", "spec", "expected", "given")

    async def build(self, conn: AsyncConnection) -> None:
        await conn.run_sync(metadata.create_all)

    async def create(
        self, interview_id: str, *, owner: str | None, language: str, level: int, setting: dict[str, Any]
    ) -> None:
        now = utc_now()
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(interviews).values(
                    id=interview_id,
                    owner=owner,
                    language=language,
                    level=level,
                    setting=setting,
                    created_at=now,
                    updated_at=now,
                )
            )

    async def get(self, interview_id: str) -> dict[str, Any] | None:
        return await self.with_children(interviews, turns, turns.c.interview_id, interview_id, "turns")

    async def add_turn(self, interview_id: str, **values: Any) -> int:
        """Store a question; its position (0-based) in the interview."""
        now = utc_now()
        async with self.engine.begin() as conn:
            position = await next_position(conn, turns, turns.c.interview_id, interview_id)
            await conn.execute(
                insert(turns).values(interview_id=interview_id, position=position, created_at=now, **values)
            )
            await conn.execute(
                update(interviews).where(interviews.c.id == interview_id).values(updated_at=now)
            )
            return int(position)

    async def record_answer(self, turn_id: str, **values: Any) -> bool:
        """Store the grade; False when the question was already graded (a concurrent answer)."""
        async with self.engine.begin() as conn:
            result = await conn.execute(
                update(turns)
                .where(turns.c.id == turn_id, turns.c.correct.is_(None))
                .values(answered_at=utc_now(), **values)
            )
            return result.rowcount == 1

    async def finish(self, interview_id: str, scorecard: dict[str, Any]) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                update(interviews)
                .where(interviews.c.id == interview_id)
                .values(scorecard=scorecard, updated_at=utc_now())
            )

    async def link_thread(self, key: str, interview_id: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(threads).values(key=key, interview_id=interview_id, created_at=utc_now())
            )

    async def interview_for_thread(self, key: str) -> str | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(threads.c.interview_id).where(threads.c.key == key))).first()
            return None if row is None else str(row[0])
