"""Conversation store: SQLAlchemy async over an SQLite file (default) or any SQLAlchemy URL.

`settings.database_url` / `DATABASE_URL`: `sqlite+aiosqlite:///./vramwise.sqlite3` (embedded,
zero set-up) or `postgresql+asyncpg://user:pass@host/db` for several replicas behind a load
balancer. Tables are created on open. A conversation keeps its turns and the last scenario,
so a restarted service continues a conversation exactly where it stopped.

Turns are written by one writer task with group commit: the turns that arrive while a
transaction is in flight go into the next one, so 200 concurrent answers cost a handful of
commits, not 200 (and SQLite never sees competing writers). `append_turn` returns only after
its turn is committed, so a follow-up sent after `done` always finds it.

Several replicas on one PostgreSQL (each replica has its own writer):
- the schema is created under a PostgreSQL advisory lock, so replicas starting together do not
  race `CREATE TABLE` (and any dialect retries once the winner's tables exist);
- conversations are upserted (`INSERT .. ON CONFLICT`), so two replicas writing the first turn of
  the same conversation (OpenAI `user` key) both land;
- a commit locks its conversations' rows (upsert, in id order: no deadlocks) before inserting turns,
  so per conversation the turns' ids follow commit order and "ORDER BY id" is the conversation's order;
- one bad turn (a value the database refuses) fails alone, not the whole group commit; NUL
  characters (PostgreSQL text cannot hold them) are stored as U+FFFD.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import (
    String,
    Text,
    and_,
    bindparam,
    case,
    delete,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.orm import selectinload
from sqlalchemy.pool import StaticPool

from service.agent.base import ConversationState, Turn
from service.agent.events import Answer
from service.db_models import Base, ConversationRow, TurnRow, utc_now
from tools.scenario import Scenario

log = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 30_000  # concurrent writers wait for the file lock instead of failing
MAX_TURNS_PER_COMMIT = 256
SQLITE_POOL_SIZE = 4
MAX_STATE_TURNS = 20  # turns of history an agent gets with a follow-up
MAX_STATES_PER_READ = 500
READ_GATHER_S = 0.05  # longest a grouped read waits for a burst of follow-ups to finish arriving
READ_QUIET_S = 0.005  # no new read for this long: the burst has arrived
# a group of finished turns waits while more answers arrive (each within FINISH_QUIET_S, for at most
# FINISH_GATHER_S) when other turns are still being answered: under load answers come from the agent's workers
# a few ms apart, and a commit of one turn costs ~90 us of the loop's CPU, of 8 turns ~30 us each
# (benchmarks/load_chat.py); `done` waits for the commit, so it goes out at most FINISH_GATHER_S later. A turn
# answered while no other is open is committed at once. New questions never wait (`meta` waits for them).
FINISH_QUIET_S = 0.01
FINISH_GATHER_S = 0.03
CHECKPOINT_EVERY_COMMITS = 64  # direct commits between WAL checkpoints (run off the loop)
DIRECT_READ_SLICE = 100  # ids per direct SQLite read on the loop (~5 ms CPU for 2-turn conversations)
MAX_ID_CHARS = 200  # conversations.id is VARCHAR(200): longer ids cannot exist
# pool per replica: writer + reader + readiness pings + GET/DELETE; replicas x (size + overflow) must stay
# under the server's max_connections (PostgreSQL default 100)
SERVER_POOL_SIZE = 5
SERVER_POOL_OVERFLOW = 5
SERVER_POOL_RECYCLE_S = 1800  # drop connections a proxy/firewall may have silently cut
CONNECT_TIMEOUT_S = 10  # an unreachable host fails readiness in seconds, not asyncpg's default 60
PING_TIMEOUT_S = 5.0
SCHEMA_LOCK_KEY = 0x5652414D  # pg_advisory_xact_lock key ("VRAM") serialising create_all across replicas
SCHEMA_ATTEMPTS = 3
# deadlock_detected, serialization_failure (postgresql.org/docs/current/errcodes-appendix.html)
RETRYABLE_SQLSTATES = frozenset({"40P01", "40001"})
COMMIT_ATTEMPTS = 3
# columns added after their table first shipped: (table, column, DDL type and default), added on open to a
# database created before them (ALTER TABLE .. ADD COLUMN: the same statement on SQLite and PostgreSQL)
ADDED_COLUMNS = (
    ("turns", "status", "VARCHAR(16) NOT NULL DEFAULT 'done'"),
    ("conversations", "owner", "VARCHAR(64)"),
)
# a turn still `in_progress` this long after its question was stored was cut off (a process killed
# mid-answer): shown as interrupted. Longer than any answer takes (the LLM timeout is 60 s).
STALE_TURN_S = 600
TurnStatus = Literal["in_progress", "done", "error", "interrupted"]

_CONVERSATIONS = ConversationRow.__table__
_TURNS = TurnRow.__table__


@dataclass
class _PendingTurn:
    conversation_id: str
    question: str
    answer: str
    language: str
    agent: str
    scenario_json: str | None
    at: datetime
    status: str = "done"
    turn_id: int | None = None  # set: finishes the turn stored at its start (`begin_turn`)
    owner: str | None = None


class StoredTurn(BaseModel):
    question: str
    answer: str
    language: str
    agent: str
    scenario: Scenario | None = None
    created_at: datetime
    status: TurnStatus = Field(
        default="done",
        description="in_progress: being answered; done; error: the question was refused (the answer says "
        "why); interrupted: cut off before the answer finished (ask it again)",
    )


class StoredConversation(BaseModel):
    conversation_id: str
    language: str | None
    scenario: Scenario | None
    turns: list[StoredTurn]
    created_at: datetime
    updated_at: datetime


def _scenario_to_json(scenario: Scenario | None) -> str | None:
    return None if scenario is None else scenario.model_dump_json(exclude_none=True)


def _scenario_from_json(raw: str | None) -> Scenario | None:
    return None if raw is None else Scenario.model_validate_json(raw)


def _clean(text_value: str) -> str:
    """PostgreSQL text cannot hold NUL ("invalid byte sequence for encoding UTF8: 0x00")."""
    return text_value.replace("\x00", "\ufffd")


def _storable_id(conversation_id: str) -> bool:
    """False for ids no stored conversation can have (they would make PostgreSQL raise)."""
    return 0 < len(conversation_id) <= MAX_ID_CHARS and "\x00" not in conversation_id


def _utc(at: datetime) -> datetime:
    """Stored timestamps as aware UTC on every backend (SQLite hands them back naive)."""
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _sqlstate(exc: BaseException) -> str | None:
    orig = getattr(exc, "orig", None)
    return getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)


def _refused_value(exc: BaseException) -> bool:
    """The database answered and refused a value (SQLSTATE class 22 data exception, 23 integrity), as
    opposed to being unreachable: only then is retrying the group one item at a time worth it."""
    state = _sqlstate(exc)
    return isinstance(exc, DataError | IntegrityError) or (state is not None and state[:2] in ("22", "23"))


def _upsert_dialect(name: str) -> Any:
    """The dialect's INSERT with ON CONFLICT (PostgreSQL, SQLite >= 3.24), or None."""
    return {"postgresql": postgresql, "sqlite": sqlite}.get(name)


async def create_schema(
    engine: AsyncEngine,
    build: Callable[[AsyncConnection], Awaitable[None]],
    *,
    lock_key: int,
    what: str,
) -> None:
    """Run `build` (CREATE TABLE IF MISSING and friends) in one transaction, safe when several replicas
    start at once: on PostgreSQL under an advisory lock held until commit (the next replica waits, then
    finds the tables: DDL is transactional there, and read committed re-reads the catalog per statement);
    elsewhere a race lost to another process (a table created between our check and our CREATE) is retried."""
    for attempt in range(1, SCHEMA_ATTEMPTS + 1):
        try:
            async with engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key})
                await build(conn)
            return
        except DBAPIError:
            if attempt == SCHEMA_ATTEMPTS:
                raise
            log.warning("creating %s raced another replica; retrying", what, exc_info=True)


def engine_for(url: str) -> AsyncEngine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        connect_args: dict[str, Any] = {}
        if parsed.get_driver_name() == "asyncpg":
            connect_args["timeout"] = CONNECT_TIMEOUT_S
        return create_async_engine(
            url,
            pool_pre_ping=True,  # a restarted database: stale pooled connections are replaced, not used
            pool_size=SERVER_POOL_SIZE,
            max_overflow=SERVER_POOL_OVERFLOW,
            pool_recycle=SERVER_POOL_RECYCLE_S,
            connect_args=connect_args,
        )
    in_memory = parsed.database in (None, "", ":memory:")
    if in_memory:  # one shared connection, or every session would see an empty database
        engine = create_async_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        # a few long-lived connections (each is a thread in aiosqlite): no churn under bursts
        engine = create_async_engine(url, pool_size=SQLITE_POOL_SIZE, max_overflow=0, pool_timeout=60)

    @event.listens_for(engine.sync_engine, "connect")
    def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA foreign_keys=ON")
        if not in_memory:
            cur.execute("PRAGMA journal_mode=WAL")  # readers do not block the writer
            # WAL + NORMAL: no fsync per commit; an OS crash may drop the last commits, never corrupts
            # (sqlite.org/pragma.html#pragma_synchronous)
            cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    return engine


class _DirectSqliteReader:
    """Reads conversations synchronously, on the serving loop, from a file SQLite database (stdlib sqlite3,
    its own read-only connection): one grouped read is two statements and a handful of GIL releases,
    where aiosqlite makes every cursor call a round trip to its thread that waits behind everything else
    on a busy loop (a read of 163 ids took 62 ms in the 200-stream burst of `benchmarks/load_chat.py`,
    6 ms idle). In WAL mode a reader takes no lock the writer holds; `busy_timeout=0` makes the rare
    exception (WAL recovery) raise at once instead of blocking the loop, and the caller then reads
    through the async engine."""

    _HEAD = "SELECT id, language, scenario_json, owner FROM conversations WHERE id IN ({marks})"
    # the last MAX_STATE_TURNS turns of each: ROW_NUMBER() over each one's turns, newest first (window
    # functions: SQLite >= 3.25); ix_turns_conversation_id holds (conversation_id, rowid) and turns.id is
    # the rowid, so each conversation's turns are one index range read in id order
    _TURNS = (
        "SELECT conversation_id, question, answer FROM (SELECT id, conversation_id, question, answer,"
        " ROW_NUMBER() OVER (PARTITION BY conversation_id ORDER BY id DESC) AS rank"
        " FROM turns WHERE conversation_id IN ({marks}) AND status = 'done')"
        " WHERE rank <= ? ORDER BY conversation_id, id"
    )

    def __init__(self, path: str) -> None:
        # isolation_level=None: transactions are ours (BEGIN below); check_same_thread=False: opened on the
        # loop's thread, but close() may run from another (a test's event loop shutting down)
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout=0")  # never wait for a lock on the serving loop
        self._conn.execute("PRAGMA query_only=ON")

    @classmethod
    def for_url(cls, url: str) -> _DirectSqliteReader | None:
        """A reader for a plain file SQLite URL; None for a server database (network I/O stays async), an
        in-memory one (another connection would see another, empty database) or a URL with options."""
        parsed = make_url(url)
        if parsed.get_backend_name() != "sqlite" or parsed.query:
            return None
        if parsed.database in (None, "", ":memory:") or parsed.database.startswith("file:"):
            return None
        return cls(parsed.database)

    def read(self, ids: list[str]) -> dict[str, _Found]:
        """The stored conversations among `ids` (scenario, last MAX_STATE_TURNS answered turns) with their
        owners; raises sqlite3.Error."""
        marks = ",".join("?" * len(ids))
        conn = self._conn
        conn.execute("BEGIN")  # one snapshot for both statements: a commit in between is not half seen
        try:
            heads = conn.execute(self._HEAD.format(marks=marks), ids).fetchall()
            turns = (
                conn.execute(self._TURNS.format(marks=marks), [*ids, MAX_STATE_TURNS]).fetchall()
                if heads
                else []
            )
        finally:
            conn.rollback()  # ends the read transaction (nothing was written), also after an error
        return _states(heads, turns)

    def close(self) -> None:
        self._conn.close()


# ---- the write statements, one copy each: the async engine runs them, the direct SQLite writer runs their
# SQLite compilation (`_DirectSqliteWriter`)
_BY_TURN_ID = _TURNS.c.id == bindparam("tid")
TURN_COLUMNS = (
    "conversation_id",
    "question",
    "answer",
    "language",
    "agent",
    "scenario_json",
    "created_at",
    "status",
)


def _turn_row(t: _PendingTurn) -> dict[str, Any]:
    """A turn's row for the INSERT (TURN_COLUMNS)."""
    return {
        "conversation_id": t.conversation_id,
        "question": t.question,
        "answer": t.answer,
        "language": t.language,
        "agent": t.agent,
        "scenario_json": t.scenario_json,
        "created_at": t.at,
        "status": t.status,
    }


CONVERSATION_COLUMNS = ("id", "language", "scenario_json", "created_at", "updated_at", "owner")


def conversation_upsert(dialect: Any) -> Any:
    """INSERT ... ON CONFLICT (id) DO UPDATE of conversations for `dialect` (sqlite or postgresql): the
    newest turn's language and time; a turn without a scenario (a concept question) keeps the stored one."""
    upsert = dialect.insert(_CONVERSATIONS)
    return upsert.on_conflict_do_update(
        index_elements=[_CONVERSATIONS.c.id],
        set_={
            "language": upsert.excluded.language,
            "updated_at": upsert.excluded.updated_at,
            "scenario_json": func.coalesce(upsert.excluded.scenario_json, _CONVERSATIONS.c.scenario_json),
        },
    )


def _answer_params(t: _PendingTurn) -> dict[str, Any]:
    """`turn_answer_update`'s parameters for a finished turn."""
    return {
        "tid": t.turn_id,
        "ans": t.answer,
        "agt": t.agent,
        "st": t.status,
        "scn": t.scenario_json,
        "lang": t.language or None,
    }


def _conversation_answer_params(t: _PendingTurn, at: Any) -> dict[str, Any]:
    """`conversation_answer_update`'s parameters for a finished turn (`at`: its time as the driver takes it)."""
    return {
        "cid": t.conversation_id,
        "tid": t.turn_id,
        "at": at,
        "lang": t.language or None,
        "scn": t.scenario_json,
    }


def turn_answer_update() -> Any:
    """A finished turn's answer, agent, status and scenario (its language unless none was detected);
    parameters tid, ans, agt, st, scn, lang."""
    return (
        update(_TURNS)
        .where(_BY_TURN_ID)
        .values(
            answer=bindparam("ans"),
            agent=bindparam("agt"),
            status=bindparam("st"),
            scenario_json=bindparam("scn", type_=Text),
            language=func.coalesce(bindparam("lang", type_=String), _TURNS.c.language),
        )
    )


def conversation_answer_update() -> Any:
    """The conversation's time, and its language and scenario unless a newer answered turn (by id) set
    them, only where the turn (and so its conversation) still exists; parameters cid, tid, at, lang, scn."""
    later = _TURNS.alias("later")
    newer = (
        later.c.conversation_id == bindparam("cid"),
        later.c.id > bindparam("tid"),
        later.c.status == "done",
    )
    newer_answered = select(later.c.id).where(*newer).exists()
    newer_scenario = select(later.c.id).where(*newer, later.c.scenario_json.is_not(None)).exists()
    lang = bindparam("lang", type_=String)
    scn = bindparam("scn", type_=Text)
    return (
        update(_CONVERSATIONS)
        .where(_CONVERSATIONS.c.id == bindparam("cid"), select(_TURNS.c.id).where(_BY_TURN_ID).exists())
        .values(
            updated_at=bindparam("at"),
            language=case((and_(lang.is_not(None), ~newer_answered), lang), else_=_CONVERSATIONS.c.language),
            scenario_json=case(
                (and_(scn.is_not(None), ~newer_scenario), scn), else_=_CONVERSATIONS.c.scenario_json
            ),
        )
    )


def turn_cut_update() -> Any:
    """A cut-off turn marked interrupted, never over a finished one; parameter tid."""
    return update(_TURNS).where(_BY_TURN_ID, _TURNS.c.status == "in_progress").values(status="interrupted")


_SQLITE_DATETIME = sqlite.DATETIME().bind_processor(sqlite.dialect())  # as SQLAlchemy stores a DateTime


@dataclass(frozen=True)
class _SqliteStatement:
    """A statement compiled for SQLite with :named parameters, and the values of its own literals
    (`status = 'done'` is bound as a parameter too)."""

    sql: str
    literals: dict[str, Any]

    def params(self, row: dict[str, Any]) -> dict[str, Any]:
        return {**self.literals, **row}


def _sqlite_statement(stmt: Any, column_keys: tuple[str, ...] | None = None) -> _SqliteStatement:
    """`stmt` compiled for sqlite3 (for an INSERT, over `column_keys`)."""
    keys = list(column_keys) if column_keys is not None else None
    compiled = stmt.compile(dialect=sqlite.dialect(paramstyle="named"), column_keys=keys)
    required = {b.key for b in compiled.binds.values() if b.required}  # what each row gives
    literals = {k: v for k, v in compiled.params.items() if k not in required and v is not None}
    return _SqliteStatement(str(compiled), literals)


class _DirectSqliteWriter:
    """Commits the writer's groups synchronously, on the serving loop, to a file SQLite database (stdlib
    sqlite3, its own connection): a group of turns is a handful of C calls, where SQLAlchemy + aiosqlite
    build and compile the statements again and make every cursor call a round trip to aiosqlite's thread
    (the thread and its GIL hand-offs were a sixth of the serving process's CPU in the 200-stream burst of
    `benchmarks/load_chat.py`). The statements are the engine's own (`conversation_upsert`,
    `turn_answer_update`, ...), compiled once for SQLite. `BEGIN IMMEDIATE` with `busy_timeout=0`:
    when another connection holds the write lock (the Slack or coach store, another process) it raises at
    once instead of blocking the loop, and so does any refused value; the caller then commits that group
    through the async engine, which waits for the lock off the loop and reports errors as before."""

    # the same statements as the engine's, compiled once for SQLite with named parameters (sqlite3 takes dicts)
    _UPSERT_CONVERSATION = _sqlite_statement(conversation_upsert(sqlite), CONVERSATION_COLUMNS)
    _INSERT_TURN = _sqlite_statement(insert(_TURNS), TURN_COLUMNS)
    _FINISH_TURN = _sqlite_statement(turn_answer_update())
    _FINISH_CONVERSATION = _sqlite_statement(conversation_answer_update())
    _CUT_TURN = _sqlite_statement(turn_cut_update())

    def __init__(self, path: str) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout=0")  # never wait for a lock on the serving loop
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA synchronous=NORMAL")  # as the engine's connections (WAL is set by them)
        # no checkpoint inside a commit on the loop (copying the WAL into the file and syncing it took 10-100 ms
        # on this box): the store runs them through the async engine every CHECKPOINT_EVERY_COMMITS commits
        self._conn.execute("PRAGMA wal_autocheckpoint=0")

    @classmethod
    def for_url(cls, url: str) -> _DirectSqliteWriter | None:
        """A writer for a plain file SQLite URL (as `_DirectSqliteReader.for_url`), else None."""
        parsed = make_url(url)
        if parsed.get_backend_name() != "sqlite" or parsed.query:
            return None
        if parsed.database in (None, "", ":memory:") or parsed.database.startswith("file:"):
            return None
        return cls(parsed.database)

    def _transaction(self, write: Callable[[sqlite3.Connection], list[int | None]]) -> list[int | None]:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")  # the write lock now, or sqlite3.OperationalError at once
        try:
            result = write(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise
        return result

    def commit_turns(
        self, turns: list[_PendingTurn], conversations: list[dict[str, Any]]
    ) -> list[int | None]:
        """Conversations upserted, then the turns appended in order; their ids (raises sqlite3.Error)."""

        def write(conn: sqlite3.Connection) -> list[int | None]:
            up = self._UPSERT_CONVERSATION
            conn.executemany(
                up.sql,
                [
                    up.params(
                        {
                            **c,
                            "created_at": _SQLITE_DATETIME(c["created_at"]),
                            "updated_at": _SQLITE_DATETIME(c["updated_at"]),
                        }
                    )
                    for c in conversations
                ],
            )
            ids: list[int | None] = []
            for t in turns:
                row = {**_turn_row(t), "created_at": _SQLITE_DATETIME(t.at)}
                cur = conn.execute(self._INSERT_TURN.sql, self._INSERT_TURN.params(row))
                ids.append(cur.lastrowid)
            return ids

        return self._transaction(write)

    def commit_finishes(self, final: list[_PendingTurn], cut: list[_PendingTurn]) -> None:
        """The finished turns' answers and their conversations, the cut-off turns marked (raises sqlite3.Error)."""

        def write(conn: sqlite3.Connection) -> list[int | None]:
            if final:
                answer, conv = self._FINISH_TURN, self._FINISH_CONVERSATION
                conn.executemany(answer.sql, [answer.params(_answer_params(t)) for t in final])
                conn.executemany(
                    conv.sql,
                    [conv.params(_conversation_answer_params(t, _SQLITE_DATETIME(t.at))) for t in final],
                )
            if cut:
                conn.executemany(self._CUT_TURN.sql, [self._CUT_TURN.params({"tid": t.turn_id}) for t in cut])
            return []

        self._transaction(write)

    def close(self) -> None:
        self._conn.close()


@dataclass
class _Found:
    """A conversation as a follow-up needs it, and who owns it."""

    state: ConversationState
    owner: str | None


def _states(heads: list[tuple[Any, ...]], turns: list[tuple[Any, ...]]) -> dict[str, _Found]:
    """Rows (id, language, scenario_json, owner) and (conversation_id, question, answer) -> states."""
    found = {
        cid: _Found(
            ConversationState(
                conversation_id=cid,
                language=language if language in ("en", "zh") else None,
                scenario=_scenario_from_json(scenario_json),
            ),
            owner,
        )
        for cid, language, scenario_json, owner in heads
    }
    for cid, question, answer in turns:
        entry = found.get(cid)
        if entry is not None:
            entry.state.turns.append(Turn(role="user", content=question))
            entry.state.turns.append(Turn(role="assistant", content=answer))
    return found


def visible(stored_owner: str | None, owner: str | None) -> bool:
    """A conversation is visible to the key that made it; with API keys off (owner None) to everyone."""
    return owner is None or stored_owner == owner


def _add_missing_columns(sync_conn: Any) -> None:
    """ALTER TABLE .. ADD COLUMN for each of ADDED_COLUMNS an existing table lacks (runs inside the schema
    transaction, under the PostgreSQL advisory lock)."""
    inspector = inspect(sync_conn)
    for table, column, ddl in ADDED_COLUMNS:
        if column not in {c["name"] for c in inspector.get_columns(table)}:
            log.info("adding column %s.%s to an existing database", table, column)
            sync_conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}"))


def _shown_status(status: str | None, created_at: datetime, stale_before: datetime) -> str:
    if status == "in_progress" and created_at < stale_before:
        return "interrupted"  # its process died mid-answer (see `_close_cut_off_turns`)
    return status or "done"


def _stale_before() -> datetime:
    return utc_now() - timedelta(seconds=STALE_TURN_S)


def _conversation_row(cid: str, latest: _PendingTurn, scenario_json: str | None) -> dict[str, Any]:
    """A conversations row as the newest pending turn of that conversation leaves it."""
    return {
        "id": cid,
        "language": latest.language,
        "scenario_json": scenario_json,
        "created_at": latest.at,
        "updated_at": latest.at,
        "owner": latest.owner,
    }


class ConversationStore:
    """Persists conversations; the app opens it in its lifespan and closes it on shutdown."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self._engine: AsyncEngine | None = None
        self._sessions: async_sessionmaker | None = None
        self._pending: asyncio.Queue[tuple[_PendingTurn, asyncio.Future[int | None]] | None] | None = None
        self._writer: asyncio.Task[None] | None = None
        self._reads: asyncio.Queue[tuple[str, asyncio.Future[_Found | None]] | None] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._direct: _DirectSqliteReader | None = None
        self._direct_writer: _DirectSqliteWriter | None = None
        self._direct_commits = 0  # since the last checkpoint
        self._checkpointing: asyncio.Task[None] | None = None
        self.checkpoints = 0  # WAL checkpoints run for the direct writer (diagnostics, tests)
        self._answering = 0  # turns begun (question stored) whose end is not submitted yet

    async def open(self) -> None:
        self._engine = engine_for(self.database_url)
        self._sessions = async_sessionmaker(self._engine, expire_on_commit=False)
        await self._create_schema()
        self._pending = asyncio.Queue()
        self._writer = asyncio.create_task(self._write_turns(self._pending), name="conversation-writer")
        self._reads = asyncio.Queue()
        self._reader = asyncio.create_task(self._read_states(self._reads), name="conversation-reader")
        self._direct = _DirectSqliteReader.for_url(self.database_url)
        self._direct_writer = _DirectSqliteWriter.for_url(self.database_url)
        log.info("conversation store open: %s", make_url(self.database_url).render_as_string())

    async def _create_schema(self) -> None:
        """CREATE TABLE IF MISSING, safe when several replicas start at once."""
        assert self._engine is not None

        async def build(conn: AsyncConnection) -> None:
            await conn.run_sync(Base.metadata.create_all)
            await conn.run_sync(_add_missing_columns)
            await self._close_cut_off_turns(conn)

        await create_schema(self._engine, build, lock_key=SCHEMA_LOCK_KEY, what="the conversation tables")

    async def _close_cut_off_turns(self, conn: Any) -> None:
        """Turns left `in_progress` by a process that died mid-answer become `interrupted`: on an embedded
        SQLite file every one (this process is its only writer), on a shared server database those older
        than STALE_TURN_S (another replica may still be answering the newer ones)."""
        stmt = update(_TURNS).where(_TURNS.c.status == "in_progress").values(status="interrupted")
        if conn.dialect.name != "sqlite":
            stmt = stmt.where(_TURNS.c.created_at < _stale_before())
        await conn.execute(stmt)

    async def close(self) -> None:
        if self._pending is not None and self._writer is not None:
            self._pending.put_nowait(None)  # finish what is queued, then stop
            await self._writer
        self._pending = self._writer = None
        if self._reads is not None and self._reader is not None:
            self._reads.put_nowait(None)
            await self._reader
        self._reads = self._reader = None
        if self._direct is not None:
            self._direct.close()
        self._direct = None
        if self._direct_writer is not None:
            self._direct_writer.close()
        self._direct_writer = None
        if self._checkpointing is not None:
            await asyncio.gather(self._checkpointing, return_exceptions=True)
        self._checkpointing = None
        if self._engine is not None:
            await self._engine.dispose()
        self._engine = None
        self._sessions = None

    @property
    def engine(self) -> AsyncEngine:
        """The open store's engine (for tables of other modules, e.g. shared rate-limit counts)."""
        if self._engine is None:
            raise RuntimeError("conversation store is not open")
        return self._engine

    def _session(self):  # type: ignore[no-untyped-def]
        if self._sessions is None:
            raise RuntimeError("conversation store is not open")
        return self._sessions()

    async def ping(self) -> bool:
        """True when the database answers a trivial query (readiness)."""
        try:
            async with asyncio.timeout(PING_TIMEOUT_S):
                async with self._session() as session:
                    await session.execute(text("SELECT 1"))
            return True
        except Exception as exc:
            log.warning("conversation store not reachable: %s", exc)
            return False

    async def load_state(self, conversation_id: str, owner: str | None = None) -> ConversationState | None:
        """The agent's view of a stored conversation (its last `MAX_STATE_TURNS` turns and its
        scenario), or None when the id is unknown. This runs before a follow-up's first event, so
        reads are grouped like writes: one reader task fetches the ids asked for meanwhile together
        (one read for a burst of follow-ups; see `_read_states`), from a file SQLite database directly
        on the loop (`_DirectSqliteReader`), from other databases through the async engine. Only
        answered turns are history; a conversation another key owns is None (`visible`)."""
        if self._reads is None:
            raise RuntimeError("conversation store is not open")
        if not _storable_id(conversation_id):  # never reaches the batch: it would fail everyone's read
            return None
        found: asyncio.Future[_Found | None] = asyncio.get_running_loop().create_future()
        self._reads.put_nowait((conversation_id, found))
        result = await found
        if result is None or not visible(result.owner, owner):
            return None
        return result.state

    async def _read_states(
        self, reads: asyncio.Queue[tuple[str, asyncio.Future[_Found | None]] | None]
    ) -> None:
        """The reader: everything asked for while the last read ran goes into the next one, and while
        a burst is still arriving (new ids within each `READ_QUIET_S`) it keeps gathering, for at most
        `READ_GATHER_S`: one read for the burst, and the requests still being parsed are not slowed by
        the agent work of streams released early. Measured with `benchmarks/load_chat.py` (200
        follow-ups): released as they came, the last requests were parsed 100-500 ms after the first;
        gathered, within ~10 ms (benchmarks/README.md, "Chat load")."""
        loop = asyncio.get_running_loop()
        stopping = False
        while not stopping:
            batch: list[tuple[str, asyncio.Future[_Found | None]]] = []
            item = await reads.get()
            gather_until = loop.time() + READ_GATHER_S
            while True:
                if item is None:
                    stopping = True
                else:
                    batch.append(item)
                if stopping or len(batch) >= MAX_STATES_PER_READ:
                    break
                if reads.empty():
                    # a burst is still arriving while each READ_QUIET_S brings new ids (a request takes a
                    # few loop iterations from its bytes to here); an idle server adds READ_QUIET_S once
                    await asyncio.sleep(READ_QUIET_S)
                    if reads.empty() or loop.time() >= gather_until:
                        break
                item = reads.get_nowait()
            if not batch:
                continue
            ids = sorted({cid for cid, _ in batch})
            try:
                states = await self._fetch_states(ids)
            except Exception as exc:
                if len(ids) == 1 or not _refused_value(exc):
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(exc)
                    continue
                # one id the database refused must not fail the others: fetch them one by one
                log.warning("a grouped read of %d conversations failed; reading them one by one", len(ids))
                for cid in ids:
                    waiting = [fut for c, fut in batch if c == cid]
                    try:
                        state = (await self._fetch_states([cid])).get(cid)
                    except Exception as one_exc:
                        for fut in waiting:
                            if not fut.done():
                                fut.set_exception(one_exc)
                    else:
                        for fut in waiting:
                            if not fut.done():
                                fut.set_result(state)
            else:
                for cid, fut in batch:
                    if not fut.done():
                        fut.set_result(states.get(cid))

    async def _fetch_states(self, ids: list[str]) -> dict[str, _Found]:
        if self._direct is not None:
            try:
                states: dict[str, _Found] = {}
                for start in range(0, len(ids), DIRECT_READ_SLICE):
                    if start:
                        await asyncio.sleep(0)  # bounded time on the loop per slice
                    states.update(self._direct.read(ids[start : start + DIRECT_READ_SLICE]))
                return states
            except sqlite3.Error as exc:  # e.g. SQLITE_BUSY during WAL recovery: wait off the loop instead
                log.info(
                    "direct read of %d conversation(s) refused (%s); using the async engine", len(ids), exc
                )
        # the last MAX_STATE_TURNS turns of each conversation: ROW_NUMBER() over each one's turns
        # (window functions: SQLite >= 3.25, PostgreSQL)
        ranked = (
            select(
                _TURNS.c.id,
                _TURNS.c.conversation_id,
                _TURNS.c.question,
                _TURNS.c.answer,
                func.row_number()
                .over(partition_by=_TURNS.c.conversation_id, order_by=_TURNS.c.id.desc())
                .label("rank"),
            )
            .where(_TURNS.c.conversation_id.in_(ids), _TURNS.c.status == "done")
            .subquery()
        )
        async with self._connect() as conn:
            heads = (
                await conn.execute(
                    select(
                        _CONVERSATIONS.c.id,
                        _CONVERSATIONS.c.language,
                        _CONVERSATIONS.c.scenario_json,
                        _CONVERSATIONS.c.owner,
                    ).where(_CONVERSATIONS.c.id.in_(ids))
                )
            ).all()
            turns = (
                await conn.execute(
                    select(ranked.c.conversation_id, ranked.c.question, ranked.c.answer)
                    .where(ranked.c.rank <= MAX_STATE_TURNS)
                    .order_by(ranked.c.conversation_id, ranked.c.id)
                )
            ).all()
        return _states([tuple(h) for h in heads], [tuple(t) for t in turns])

    def _connect(self):  # type: ignore[no-untyped-def]
        if self._engine is None:
            raise RuntimeError("conversation store is not open")
        return self._engine.connect()

    async def get(self, conversation_id: str, owner: str | None = None) -> StoredConversation | None:
        """The conversation with every turn (also those cut off: `status`), None when unknown or another
        key's."""
        if not _storable_id(conversation_id):
            return None
        async with self._session() as session:
            row = await session.scalar(
                select(ConversationRow)
                .where(ConversationRow.id == conversation_id)
                .options(selectinload(ConversationRow.turns))
            )
            if row is None or not visible(row.owner, owner):
                return None
            stale_before = _stale_before()
            return StoredConversation(
                conversation_id=row.id,
                language=row.language,
                scenario=_scenario_from_json(row.scenario_json),
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
                    for t in row.turns
                ],
                created_at=_utc(row.created_at),
                updated_at=_utc(row.updated_at),
            )

    async def ensure_conversation(self, conversation_id: str, language: str | None = None) -> None:
        """Create the conversation row if it is missing (an id handed out stays valid)."""
        if not _storable_id(conversation_id):
            raise ValueError(f"conversation id cannot be stored (1 to {MAX_ID_CHARS} characters, no NUL)")
        assert self._engine is not None
        row = {"id": conversation_id, "language": language, "created_at": utc_now(), "updated_at": utc_now()}
        async with self._engine.begin() as conn:
            dialect = _upsert_dialect(conn.dialect.name)
            if dialect is not None:  # another replica may create it at the same moment
                await conn.execute(dialect.insert(_CONVERSATIONS).on_conflict_do_nothing(), [row])
                return
            known = await conn.scalar(
                select(_CONVERSATIONS.c.id).where(_CONVERSATIONS.c.id == conversation_id)
            )
            if known is None:
                await conn.execute(insert(_CONVERSATIONS), [row])

    async def append_turn(self, conversation_id: str, question: str, answer: Answer) -> None:
        """Store one answered question (committed when this returns); the conversation's scenario
        becomes the answer's one."""
        turn = _PendingTurn(
            conversation_id=conversation_id,
            question=_clean(question),
            answer=_clean(answer.answer),
            language=answer.language,
            agent=_clean(answer.agent),
            scenario_json=_scenario_to_json(answer.scenario),
            at=utc_now(),
        )
        await self._submit(turn)

    async def begin_turn(
        self, conversation_id: str, question: str, language: str, *, owner: str | None = None
    ) -> int:
        """Store a question before it is answered (status `in_progress`; the conversation is created when
        new, owned by `owner`), committed when this returns: a process killed mid-answer, or a client that
        goes away, loses nothing. Returns the turn's id for `finish_turn`."""
        turn = _PendingTurn(
            conversation_id=conversation_id,
            question=_clean(question),
            answer="",
            language=language,
            agent="",
            scenario_json=None,
            at=utc_now(),
            status="in_progress",
            owner=owner,
        )
        turn_id = await self._submit(turn)
        assert turn_id is not None
        self._answering += 1
        return turn_id

    async def finish_turn(
        self,
        turn_id: int,
        conversation_id: str,
        *,
        answer: str,
        status: TurnStatus,
        language: str | None = None,
        agent: str = "",
        scenario: Scenario | None = None,
        scenario_json: str | None = None,
    ) -> None:
        """Record how a begun turn ended (committed when this returns). A conversation deleted meanwhile
        stays deleted: only existing rows are updated. `interrupted` never overwrites a finished turn.
        `scenario_json`: the scenario already serialised as stored (`model_dump_json(exclude_none=True)`),
        instead of `scenario`."""
        turn = self._finishing(turn_id, conversation_id, answer, status, language, agent, scenario)
        if scenario_json is not None:
            turn.scenario_json = scenario_json
        self._answering = max(0, self._answering - 1)
        await self._submit(turn)

    def finish_turn_soon(
        self, turn_id: int, conversation_id: str, status: TurnStatus = "interrupted"
    ) -> None:
        """`finish_turn` without waiting (a stream torn down by a disconnect cannot await any more)."""
        if self._pending is None:
            return
        self._answering = max(0, self._answering - 1)
        done: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        done.add_done_callback(lambda f: f.cancelled() or f.exception())  # nobody awaits it: no warning
        self._pending.put_nowait(
            (self._finishing(turn_id, conversation_id, "", status, None, "", None), done)
        )

    @staticmethod
    def _finishing(
        turn_id: int,
        conversation_id: str,
        answer: str,
        status: str,
        language: str | None,
        agent: str,
        scenario: Scenario | None,
    ) -> _PendingTurn:
        return _PendingTurn(
            conversation_id=conversation_id,
            question="",
            answer=_clean(answer),
            language=language or "",
            agent=_clean(agent),
            scenario_json=_scenario_to_json(scenario),
            at=utc_now(),
            status=status,
            turn_id=turn_id,
        )

    async def _submit(self, turn: _PendingTurn) -> int | None:
        if self._pending is None:
            raise RuntimeError("conversation store is not open")
        if not _storable_id(turn.conversation_id):
            raise ValueError(f"conversation id cannot be stored (1 to {MAX_ID_CHARS} characters, no NUL)")
        done: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        self._pending.put_nowait((turn, done))
        return await done

    async def _write_turns(
        self, pending: asyncio.Queue[tuple[_PendingTurn, asyncio.Future[int | None]] | None]
    ) -> None:
        """The single writer: everything queued while the last commit ran goes into the next one (new
        turns in one transaction, finished ones in another). A group of finished turns only also waits
        for more while others are being answered (FINISH_QUIET_S, FINISH_GATHER_S)."""
        loop = asyncio.get_running_loop()
        stopping = False
        while not stopping:
            item = await pending.get()
            batch: list[tuple[_PendingTurn, asyncio.Future[int | None]]] = []
            gather_until: float | None = None
            while True:
                if item is None:
                    stopping = True
                else:
                    batch.append(item)
                if stopping or len(batch) >= MAX_TURNS_PER_COMMIT:
                    break
                if not pending.empty():
                    item = pending.get_nowait()
                    continue
                if not self._more_answers_coming(batch):
                    break
                # the next item wakes the writer at once (a new question then ends the wait: it is committed now)
                gather_until = gather_until or loop.time() + FINISH_GATHER_S
                wait = min(FINISH_QUIET_S, gather_until - loop.time())
                if wait <= 0:
                    break
                try:
                    async with asyncio.timeout(wait):
                        item = await pending.get()
                except TimeoutError:
                    break
            new = [(t, f) for t, f in batch if t.turn_id is None]
            finished = [(t, f) for t, f in batch if t.turn_id is not None]
            if new:
                await self._write_group(new, self._commit_turns)
            if finished:
                await self._write_group(finished, self._commit_finishes)

    def _more_answers_coming(self, batch: list[tuple[_PendingTurn, asyncio.Future[int | None]]]) -> bool:
        """Worth waiting for more: the batch holds finished turns only, and other turns are being answered."""
        return self._answering > 0 and all(t.turn_id is not None for t, _ in batch)

    async def _write_group(
        self,
        group: list[tuple[_PendingTurn, asyncio.Future[int | None]]],
        commit: Callable[[list[_PendingTurn]], Awaitable[list[int | None]]],
    ) -> None:
        try:
            results = await self._commit_with_retry([t for t, _ in group], commit)
        except Exception as exc:
            if len(group) == 1 or not _refused_value(exc):  # e.g. the database is down: all fail now
                log.exception("could not store %d turn(s)", len(group))
                for _, fut in group:
                    if not fut.done():
                        fut.set_exception(exc)
                return
            # one turn the database refuses must not lose the others: commit them one by one
            log.warning("a group commit of %d turns failed; storing them one by one", len(group))
            for turn, fut in group:
                try:
                    (one,) = await self._commit_with_retry([turn], commit)
                except Exception as one_exc:
                    log.exception("could not store a turn of conversation %s", turn.conversation_id)
                    if not fut.done():
                        fut.set_exception(one_exc)
                else:
                    if not fut.done():
                        fut.set_result(one)
        else:
            for (_, fut), result in zip(group, results, strict=True):
                if not fut.done():
                    fut.set_result(result)

    async def _commit_with_retry(
        self,
        turns: list[_PendingTurn],
        commit: Callable[[list[_PendingTurn]], Awaitable[list[int | None]]],
    ) -> list[int | None]:
        """A deadlock or serialisation failure (another replica) rolls back cleanly: commit again."""
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                return await commit(turns)
            except DBAPIError as exc:
                if _sqlstate(exc) not in RETRYABLE_SQLSTATES or attempt == COMMIT_ATTEMPTS:
                    raise
                log.warning("commit of %d turn(s) hit %s; retrying", len(turns), _sqlstate(exc))
                await asyncio.sleep(0.01 * attempt)
        raise AssertionError("unreachable")

    def _committed_directly(self) -> None:
        """Every CHECKPOINT_EVERY_COMMITS direct commits, a WAL checkpoint through the async engine: its thread
        copies the WAL into the database file and restarts the WAL (RESTART: a PASSIVE one never caught up
        with a writer that keeps committing, and the WAL grew without end). Meanwhile the direct writer finds
        the file locked and that group goes through the engine, which waits off the loop."""
        self._direct_commits += 1
        if self._direct_commits < CHECKPOINT_EVERY_COMMITS:
            return
        if self._checkpointing is not None and not self._checkpointing.done():
            return
        self._direct_commits = 0
        self._checkpointing = asyncio.create_task(self._checkpoint(), name="conversation-wal-checkpoint")

    async def _after_checkpoint(self) -> None:
        """A WAL checkpoint of ours holds the file's write lock until it ends: a group waits for it here, then
        is written directly. Refused by the lock, it went through the async engine, which waits for the same
        lock in its thread and builds and compiles its statements again (a quarter of the writer's CPU under
        the load of benchmarks/load_chat.py)."""
        running = self._checkpointing
        if running is not None and not running.done():
            await asyncio.wait([running])

    async def _checkpoint(self) -> None:
        try:
            async with self._connect() as conn:
                await conn.exec_driver_sql("PRAGMA wal_checkpoint(RESTART)")
            self.checkpoints += 1
        except Exception:
            log.warning("WAL checkpoint of the conversation store failed", exc_info=True)

    async def _commit_finishes(self, turns: list[_PendingTurn]) -> list[int | None]:
        """One transaction: the conversations' rows locked (id order, as every writer does, so no deadlock),
        the turns' answers and statuses, then each conversation's time, and its language and scenario from
        its newest answered turn (by turn id, i.e. question order, whichever answer finished last), only
        where the turn (and so its conversation) still exists."""
        assert self._engine is not None
        final = sorted(
            (t for t in turns if t.status != "interrupted"), key=lambda t: (t.conversation_id, t.turn_id)
        )
        cut = [t for t in turns if t.status == "interrupted"]
        if self._direct_writer is not None:
            await self._after_checkpoint()
            try:
                self._direct_writer.commit_finishes(final, cut)
                self._committed_directly()
                return [None] * len(turns)
            except sqlite3.Error as exc:  # locked by another connection, or a refused value: the engine says
                log.info("direct write of %d turn(s) refused (%s); using the async engine", len(turns), exc)
        async with self._engine.begin() as conn:
            if final:
                # the lock first, in its own statement: under READ COMMITTED the statements after it see
                # what another replica committed for these conversations while this one waited
                await conn.execute(
                    select(_CONVERSATIONS.c.id)
                    .where(_CONVERSATIONS.c.id.in_(sorted({t.conversation_id for t in final})))
                    .order_by(_CONVERSATIONS.c.id)
                    .with_for_update()
                )
                await conn.execute(
                    turn_answer_update(),
                    [_answer_params(t) for t in final],
                )
                await conn.execute(
                    conversation_answer_update(),
                    # in turn order: within this batch too, the newest answer wins
                    [_conversation_answer_params(t, t.at) for t in final],
                )
            if cut:
                await conn.execute(
                    turn_cut_update(),
                    [{"tid": t.turn_id} for t in cut],
                )
        return [None] * len(turns)

    async def _commit_turns(self, turns: list[_PendingTurn]) -> list[int | None]:
        """One transaction: conversations upserted (locking their rows), then all turns appended; their ids
        in the order given."""
        assert self._engine is not None
        latest: dict[str, _PendingTurn] = {}
        scenario_of: dict[str, str | None] = {}
        for t in turns:
            latest[t.conversation_id] = t
            if t.scenario_json is not None:
                scenario_of[t.conversation_id] = t.scenario_json
        ids = sorted(latest)  # every replica locks conversation rows in the same order: no deadlock
        if self._direct_writer is not None:
            await self._after_checkpoint()
            try:
                ids_given = self._direct_writer.commit_turns(
                    turns, [_conversation_row(cid, latest[cid], scenario_of.get(cid)) for cid in ids]
                )
                self._committed_directly()
                return ids_given
            except sqlite3.Error as exc:  # locked by another connection, or a refused value: the engine says
                log.info("direct write of %d turn(s) refused (%s); using the async engine", len(turns), exc)
        async with self._engine.begin() as conn:
            dialect = _upsert_dialect(conn.dialect.name)
            if dialect is None:
                await self._merge_conversations_portable(conn, ids, latest, scenario_of)
            else:
                await conn.execute(
                    conversation_upsert(dialect),
                    [_conversation_row(cid, latest[cid], scenario_of.get(cid)) for cid in ids],
                )
            # the rows above stay locked until commit, so a concurrent commit for the same conversation
            # takes its turn ids after ours: per conversation, id order is commit order
            inserted = await conn.execute(
                insert(_TURNS).returning(_TURNS.c.id, sort_by_parameter_order=True),
                [_turn_row(t) for t in turns],
            )
            return list(inserted.scalars().all())

    @staticmethod
    async def _merge_conversations_portable(
        conn: Any, ids: list[str], latest: dict[str, _PendingTurn], scenario_of: dict[str, str | None]
    ) -> None:
        """Dialects without ON CONFLICT: insert the new conversations, update the known ones."""
        known = set(
            (await conn.execute(select(_CONVERSATIONS.c.id).where(_CONVERSATIONS.c.id.in_(ids)))).scalars()
        )
        new = [_conversation_row(cid, latest[cid], scenario_of.get(cid)) for cid in ids if cid not in known]
        if new:
            await conn.execute(insert(_CONVERSATIONS), new)
        by_id = _CONVERSATIONS.c.id == bindparam("cid")
        with_scenario = [
            {"cid": cid, "lang": latest[cid].language, "at": latest[cid].at, "scn": scenario_of[cid]}
            for cid in ids
            if cid in known and cid in scenario_of
        ]
        without = [
            {"cid": cid, "lang": latest[cid].language, "at": latest[cid].at}
            for cid in ids
            if cid in known and cid not in scenario_of
        ]
        if with_scenario:
            await conn.execute(
                update(_CONVERSATIONS)
                .where(by_id)
                .values(
                    language=bindparam("lang"), updated_at=bindparam("at"), scenario_json=bindparam("scn")
                ),
                with_scenario,
            )
        if without:
            await conn.execute(
                update(_CONVERSATIONS)
                .where(by_id)
                .values(language=bindparam("lang"), updated_at=bindparam("at")),
                without,
            )

    async def delete(self, conversation_id: str, owner: str | None = None) -> bool:
        """Forget a conversation and its turns; a stream still answering in it finds it gone and does not
        bring it back (`finish_turn` only updates rows that exist)."""
        if not _storable_id(conversation_id):
            return False
        async with self._session() as session, session.begin():
            # the conversation's row first, locked, as every writer takes it (then its turns): no deadlock
            row = await session.get(ConversationRow, conversation_id, with_for_update=True)
            if row is None or not visible(row.owner, owner):
                return False
            await session.execute(delete(TurnRow).where(TurnRow.conversation_id == conversation_id))
            await session.execute(delete(ConversationRow).where(ConversationRow.id == conversation_id))
            return True
