"""Tables of the conversation store (SQLAlchemy 2 declarative; SQLite or PostgreSQL).

A conversation owns its turns and the last scenario (JSON), so a follow-up question
after a restart continues from exactly what was stored.
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

    turns: Mapped[list[TurnRow]] = relationship(
        back_populates="conversation",
        order_by="TurnRow.id",
        cascade="all, delete-orphan",
        passive_deletes=True,
    )


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

    conversation: Mapped[ConversationRow] = relationship(back_populates="turns")
