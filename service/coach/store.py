"""Coach sessions in the database (the same URL as the conversation store, tables of their own).

A session keeps its language, current difficulty and every question with its stated scenario,
quantity, expected figure, the answer, the grade and the hints asked, so a restarted service (or
`vramwise quiz --session ID`) continues it with its history and score. SQLAlchemy Core over SQLite
or PostgreSQL; the tables are created on open.
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
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from service.coach.table_store import TableStore, next_position, utc_now

metadata = MetaData()
SCHEMA_LOCK_KEY = 0x56524143  # pg_advisory_xact_lock key ("VRAC") serialising the coach tables' creation

sessions = Table(
    "coach_sessions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("language", String(8), nullable=False),
    Column("topic", String(40), nullable=True),  # a session held to one topic, or None
    Column("difficulty", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    # the SHA-256 digest of the API key that made it (service/api/auth.py); None with keys off or from
    # a chat channel (Slack, the CLI): another key gets 404 for it
    Column("owner", String(64), nullable=True),
)

questions = Table(
    "coach_questions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("session_id", String(64), ForeignKey("coach_sessions.id", ondelete="CASCADE"), index=True),
    Column("position", Integer, nullable=False),
    Column("topic", String(40), nullable=False),
    Column("difficulty", Integer, nullable=False),
    Column("language", String(8), nullable=False),
    Column("text", Text, nullable=False),
    Column("quantity", String(120), nullable=False),
    Column("spec", JSON, nullable=False),  # QuestionSpec fields (scenario, ask, answer_in, facts)
    Column("expected", JSON, nullable=False),
    Column("hints", Integer, nullable=False, default=0),
    Column("answer", Text, nullable=True),
    Column("given", JSON, nullable=True),
    Column("correct", Boolean, nullable=True),
    Column("error_pct", Float, nullable=True),
    Column("explanation", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("answered_at", DateTime(timezone=True), nullable=True),
)

# a chat thread (Slack "team:channel:thread_ts") where a quiz was posted -> its session
threads = Table(
    "coach_threads",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("session_id", String(64), ForeignKey("coach_sessions.id", ondelete="CASCADE"), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)


def _add_owner_column(sync_conn: Any) -> None:
    """coach_sessions.owner on a database made before sessions had owners (existing sessions: no owner)."""
    if "owner" not in {c["name"] for c in inspect(sync_conn).get_columns("coach_sessions")}:
        sync_conn.execute(text("ALTER TABLE coach_sessions ADD COLUMN owner VARCHAR(64)"))


class CoachStore(TableStore):
    """Sessions and questions; `open()` creates the tables, `close()` releases the engine."""

    name = "coach"
    lock_key = SCHEMA_LOCK_KEY
    json_columns = ("spec", "expected", "given")

    async def build(self, conn: AsyncConnection) -> None:
        await conn.run_sync(metadata.create_all)
        await conn.run_sync(_add_owner_column)

    async def create_session(
        self, session_id: str, language: str, topic: str | None, difficulty: int, owner: str | None = None
    ) -> None:
        now = utc_now()
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(sessions).values(
                    id=session_id,
                    language=language,
                    topic=topic,
                    difficulty=difficulty,
                    created_at=now,
                    updated_at=now,
                    owner=owner,
                )
            )

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        return await self.with_children(sessions, questions, questions.c.session_id, session_id, "questions")

    async def add_question(self, session_id: str, **values: Any) -> None:
        now = utc_now()
        async with self.engine.begin() as conn:
            position = await next_position(conn, questions, questions.c.session_id, session_id)
            await conn.execute(
                insert(questions).values(
                    session_id=session_id, position=position, created_at=now, hints=0, **values
                )
            )
            await conn.execute(update(sessions).where(sessions.c.id == session_id).values(updated_at=now))

    async def link_thread(self, key: str, session_id: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(insert(threads).values(key=key, session_id=session_id, created_at=utc_now()))

    async def session_for_thread(self, key: str) -> str | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(threads.c.session_id).where(threads.c.key == key))).first()
            return None if row is None else str(row[0])

    async def add_hint(self, question_id: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                update(questions).where(questions.c.id == question_id).values(hints=questions.c.hints + 1)
            )

    async def record_answer(
        self,
        session_id: str,
        question_id: str,
        *,
        answer: str,
        given: dict[str, Any] | None,
        correct: bool,
        error_pct: float | None,
        explanation: str,
        difficulty: int,
    ) -> bool:
        """Store the grade; False when the question was already graded (a second answer is refused)."""
        now = utc_now()
        async with self.engine.begin() as conn:
            result = await conn.execute(
                update(questions)
                .where(questions.c.id == question_id, questions.c.correct.is_(None))
                .values(
                    answer=answer,
                    given=given,
                    correct=correct,
                    error_pct=error_pct,
                    explanation=explanation,
                    answered_at=now,
                )
            )
            if result.rowcount != 1:
                return False
            await conn.execute(
                update(sessions)
                .where(sessions.c.id == session_id)
                .values(difficulty=difficulty, updated_at=now)
            )
            return True
