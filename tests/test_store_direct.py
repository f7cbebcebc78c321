"""The conversation store's direct SQLite writer (service/store.py `_DirectSqliteWriter`): on a file database
the group commits go through stdlib sqlite3 on the loop; they leave the same rows as the async engine's
statements, and a group it cannot write (the file locked by another connection) goes through the engine."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

import service.store as store_module
from service.agent.events import Answer
from service.store import ConversationStore
from tools.scenario import Scenario

AT = datetime(2026, 12, 2, 1, 2, 3, 456789, tzinfo=UTC)
ON_4090 = Scenario(model="llama-2-7b", task="inference", gpu="4090")


async def _conversations(store: ConversationStore, n: int = 24) -> None:
    """Every kind of write, concurrently: begun and finished turns (done, error, interrupted), whole turns,
    owners, scenarios and languages that change, a NUL in a question."""

    async def one(i: int) -> None:
        cid = f"c{i}"
        first = await store.begin_turn(cid, f"q{i}", "en", owner="owner" if i % 2 else None)
        await store.finish_turn(
            first,
            cid,
            answer=f"a{i}",
            status="done",
            language="zh" if i % 3 else "en",
            agent="offline",
            scenario=ON_4090 if i % 2 else None,
        )
        second = await store.begin_turn(cid, f"q{i} again\x00", "en")
        if i % 4 == 0:
            store.finish_turn_soon(second, cid)
        else:
            await store.finish_turn(second, cid, answer="refused", status="error", agent="offline")
        await store.append_turn(
            cid,
            "whole",
            Answer(
                question="whole",
                language="en",
                answer="x",
                scenario=ON_4090.merged(gpu="a100-80gb") if i % 3 == 0 else None,
            ),
        )

    await asyncio.gather(*(one(i) for i in range(n)))
    await asyncio.sleep(0.05)  # the interrupted marks (finish_turn_soon) are written


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return [
            (table, *row)
            for table in ("conversations", "turns")
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1")
        ]


async def test_direct_writes_leave_the_rows_the_engine_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "utc_now", lambda: AT)
    paths = {}
    for how in ("direct", "engine"):
        paths[how] = tmp_path / f"{how}.sqlite3"
        store = ConversationStore(f"sqlite+aiosqlite:///{paths[how]}")
        await store.open()
        try:
            assert store._direct_writer is not None  # a file database is written directly
            if how == "engine":
                store._direct_writer.close()  # every direct write now raises: the engine writes them all
            await _conversations(store)
        finally:
            await store.close()
    direct, engine = _rows(paths["direct"]), _rows(paths["engine"])
    assert len(direct) == 24 + 24 * 3
    assert direct == engine
    assert (
        "turns",
        1,
        "c0",
        "q0",
        "a0",
        "en",
        "offline",
        None,
        "2026-12-02 01:02:03.456789",
        "done",
    ) in direct


async def test_a_locked_database_is_written_through_the_engine(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another connection holds the write lock: the direct writer gives up at once (the loop is not blocked)
    and the group is committed through the async engine once the lock is released."""
    path = tmp_path / "locked.sqlite3"
    store = ConversationStore(f"sqlite+aiosqlite:///{path}")
    await store.open()
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with caplog.at_level(logging.INFO, logger="service.store"):
            write = asyncio.create_task(
                store.append_turn(
                    "c1", "q", Answer(question="q", language="zh", answer="a", scenario=ON_4090)
                )
            )
            await asyncio.sleep(0.2)
            assert not write.done()  # waiting for the lock, off the loop: the loop still runs this test
            other.execute("COMMIT")
            await asyncio.wait_for(write, 10)
        assert any("direct write of 1 turn(s) refused" in r.message for r in caplog.records)
        state = await store.load_state("c1")
        assert state is not None and state.scenario == ON_4090 and state.language == "zh"
        assert [t.content for t in state.turns] == ["q", "a"]
    finally:
        other.close()
        await store.close()


async def test_the_wal_is_checkpointed_off_the_loop(tmp_path: Path) -> None:
    """The direct writer never checkpoints inside a commit on the loop (wal_autocheckpoint=0); the store runs a
    checkpoint (RESTART) through the async engine every CHECKPOINT_EVERY_COMMITS commits, so the WAL file stays
    small however much is written."""
    path = tmp_path / "wal.sqlite3"
    store = ConversationStore(f"sqlite+aiosqlite:///{path}")
    await store.open()
    try:
        answer = "x" * 20_000
        every = store_module.CHECKPOINT_EVERY_COMMITS
        for block in range(4):  # one commit each: 5 MB of answers
            for j in range(every):
                i = block * every + j
                await store.append_turn(f"c{i}", "q", Answer(question="q", language="en", answer=answer))
            # the block's last commit started a checkpoint off the loop: wait for it (however slow the
            # machine), so that no commit of the next block meets the checkpoint's lock
            for _ in range(500):
                if store.checkpoints >= block + 1:
                    break
                await asyncio.sleep(0.02)
            assert store.checkpoints == block + 1
        wal = path.with_name(path.name + "-wal")
        # ~64 commits (~2.7 MB of WAL frames) between checkpoints; never checkpointed it grew to 10.6 MB
        assert wal.stat().st_size < 6 * 2**20
        state = await store.load_state(f"c{4 * every - 1}")
        assert state is not None and state.turns[1].content == answer
    finally:
        await store.close()
