"""What the coach's stores share (service/coach/store.py: quiz sessions; service/coach/interview/store.py:
interviews): an engine opened on the service's database URL with the store's own tables created under its
advisory lock (service.store.create_schema), a parent row with its ordered children, rows as dicts."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Column, Table, func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from service.store import create_schema, engine_for


def utc_now() -> datetime:
    return datetime.now(UTC)


def row_dict(row: Any, json_columns: Iterable[str]) -> dict[str, Any]:
    """A result row as a dict, its JSON columns decoded where the driver hands them back as text."""
    data = dict(row._mapping)
    for key in json_columns:
        if isinstance(data.get(key), str):
            data[key] = json.loads(data[key])
    return data


class TableStore:
    """An engine on `database_url`; `open()` creates the store's tables (`build`), `close()` releases it."""

    name = "coach"  # said in start-up errors ("the coach tables") and in "not open"
    lock_key = 0  # pg_advisory_xact_lock key serialising the tables' creation
    json_columns: tuple[str, ...] = ()

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self._engine: AsyncEngine | None = None

    async def build(self, conn: AsyncConnection) -> None:
        raise NotImplementedError

    async def open(self) -> None:
        """Create the tables if missing, safe when several replicas start at once: on PostgreSQL under an
        advisory lock held until commit (the next replica then finds the tables); elsewhere a race lost to
        another process is retried."""
        self._engine = engine_for(self.database_url)
        build: Callable[[AsyncConnection], Awaitable[None]] = self.build
        await create_schema(self._engine, build, lock_key=self.lock_key, what=f"the {self.name} tables")

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
        self._engine = None

    @property
    def engine(self) -> AsyncEngine:
        if self._engine is None:
            raise RuntimeError(f"{self.name} store is not open")
        return self._engine

    def row(self, row: Any) -> dict[str, Any]:
        return row_dict(row, self.json_columns)

    async def with_children(
        self, parent: Table, children: Table, parent_key: Column[Any], parent_id: str, name: str
    ) -> dict[str, Any] | None:
        """The parent row `parent_id` with its children (`parent_key` == it, by position) under `name`."""
        async with self.engine.connect() as conn:
            found = (await conn.execute(select(parent).where(parent.c.id == parent_id))).first()
            if found is None:
                return None
            rows = await conn.execute(
                select(children).where(parent_key == parent_id).order_by(children.c.position)
            )
            data = self.row(found)
            data[name] = [self.row(r) for r in rows]
            return data


async def next_position(
    conn: AsyncConnection, children: Table, parent_key: Column[Any], parent_id: str
) -> int:
    """The 0-based position of a new child: how many the parent has."""
    count = select(func.count()).select_from(children).where(parent_key == parent_id)
    return int((await conn.execute(count)).scalar_one())
