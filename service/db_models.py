"""Tables of the conversation store (SQLAlchemy 2 declarative; SQLite or PostgreSQL).

A conversation owns its turns and the last scenario (JSON), so a follow-up question
after a restart continues from exactly what was stored. Columns added after a table first shipped are
added to existing databases on open (`service/store.py`, `ADDED_COLUMNS`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utc_now() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class ConversationRow(Base):
    __tablename__ = "conversations"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    language: Mapped[str | None] = mapped_column(String(8), nullable=True)
    scenario_json: Mapped[str | None] = mapped_column(Text, nullable=True)  # the last scenario
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    # who may see it when API keys are on: a digest of the key that created it (never the key); NULL = open
    owner: Mapped[str | None] = mapped_column(String(64), nullable=True)

    turns: Mapped[list[TurnRow]] = relationship(
        back_populates="conversation",
        order_by="TurnRow.id",
        cascade="all, delete-orphan",
        passive_deletes=True,
    )


class RateLimitRow(Base):
    """Requests per client key per fixed window, shared by every replica of one database."""

    __tablename__ = "rate_limit_windows"

    client: Mapped[str] = mapped_column(String(80), primary_key=True)
    window_start: Mapped[int] = mapped_column(Integer, primary_key=True)  # seconds since the epoch
    hits: Mapped[int] = mapped_column(Integer, default=0)


class TurnRow(Base):
    __tablename__ = "turns"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(
        String(200), ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    question: Mapped[str] = mapped_column(Text)
    answer: Mapped[str] = mapped_column(Text)
    language: Mapped[str] = mapped_column(String(8))
    agent: Mapped[str] = mapped_column(String(40))
    scenario_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    # in_progress (stored with the question, before the agent runs), done, error (the agent refused the
    # question: the answer holds why), interrupted (the stream was cut off before the answer finished)
    status: Mapped[str] = mapped_column(String(16), default="done", server_default="done")

    conversation: Mapped[ConversationRow] = relationship(back_populates="turns")
