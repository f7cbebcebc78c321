"""The conversation store's writer groups finished turns (service/store.py `_write_turns`): while other turns
are being answered, answers that arrive within FINISH_QUIET_S of each other share one commit; an answer with
no other turn open, and every new question, is committed at once; a group meeting the store's own WAL
checkpoint waits for it and is written directly."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import service.store as store_module
from service.store import ConversationStore

QUIET_S = 0.5  # long enough that the steps below always land within it, however loaded the machine
WAIT_BOUND_S = 5.0  # the time nothing here may take: the waits it would show are 30 s


@pytest.fixture
async def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ConversationStore]:
    monkeypatch.setattr(store_module, "FINISH_QUIET_S", QUIET_S)
    monkeypatch.setattr(store_module, "FINISH_GATHER_S", 30.0)
    s = ConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'c.sqlite3'}")
    await s.open()
    yield s
    await s.close()


def _count_commits(store: ConversationStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the store's commits of finished turns, in order."""
    sizes: list[int] = []
    commit = store._commit_finishes

    async def counted(turns):  # type: ignore[no-untyped-def]
        sizes.append(len(turns))
        return await commit(turns)

    monkeypatch.setattr(store, "_commit_finishes", counted)
    return sizes


async def _finish(store: ConversationStore, turn_id: int, cid: str) -> None:
    await store.finish_turn(
        turn_id, cid, answer=f"answer {cid}", status="done", language="en", agent="offline"
    )


async def test_answers_arriving_while_others_are_answered_share_a_commit(
    store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = _count_commits(store, monkeypatch)
    ids = [await store.begin_turn(f"c{i}", f"q{i}", "en") for i in range(3)]
    finishing = []
    for i, tid in enumerate(ids):
        finishing.append(asyncio.create_task(_finish(store, tid, f"c{i}")))
        await asyncio.sleep(0.01)  # answers a few ms apart, as the workers send them
    await asyncio.gather(*finishing)
    assert sizes == [3]  # the last one closed the group: no turn was open any more
    stored = await store.get("c2")
    assert stored is not None and stored.turns[0].status == "done" and stored.turns[0].answer == "answer c2"


async def test_an_answer_with_no_other_turn_open_is_committed_at_once(
    store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = _count_commits(store, monkeypatch)
    tid = await store.begin_turn("c", "q", "en")
    start = time.monotonic()
    await _finish(store, tid, "c")
    assert time.monotonic() - start < QUIET_S
    assert sizes == [1]


async def test_a_new_question_ends_the_wait_and_is_committed_at_once(
    store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = _count_commits(store, monkeypatch)
    first, _open = [await store.begin_turn(f"c{i}", f"q{i}", "en") for i in range(2)]
    finishing = asyncio.create_task(_finish(store, first, "c0"))  # the writer now waits for more answers
    await asyncio.sleep(0.01)
    start = time.monotonic()
    async with asyncio.timeout(WAIT_BOUND_S):
        await store.begin_turn("c-new", "a new question", "en")
        new_question_s = time.monotonic() - start
        await finishing  # committed with it, not after a quiet period of its own
    assert new_question_s < QUIET_S
    assert time.monotonic() - start < QUIET_S
    assert sizes == [1]


async def test_a_group_waits_at_most_the_quiet_period_for_the_next_answer(
    store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = _count_commits(store, monkeypatch)
    first, _still_answering = [await store.begin_turn(f"c{i}", f"q{i}", "en") for i in range(2)]
    start = time.monotonic()
    await _finish(
        store, first, "c0"
    )  # another turn is open but sends nothing: committed after the quiet period
    assert QUIET_S * 0.9 <= time.monotonic() - start < WAIT_BOUND_S
    assert sizes == [1]


async def test_a_group_waits_for_a_checkpoint_of_ours_and_is_then_written_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The store's WAL checkpoint holds the file's write lock: a group committed meanwhile waits for it and is
    written by the direct writer, not refused and sent through the async engine."""
    path = tmp_path / "c.sqlite3"
    monkeypatch.setattr(store_module, "CHECKPOINT_EVERY_COMMITS", 1)  # every direct commit starts one
    store = ConversationStore(f"sqlite+aiosqlite:///{path}")
    await store.open()
    holding = asyncio.Event()

    async def slow_checkpoint() -> None:  # holds the lock as a RESTART checkpoint does, for 0.3 s
        lock = sqlite3.connect(path, isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
        holding.set()
        await asyncio.sleep(0.3)
        lock.execute("COMMIT")
        lock.close()

    monkeypatch.setattr(store, "_checkpoint", slow_checkpoint)
    try:
        with caplog.at_level(logging.INFO, logger="service.store"):
            await store.begin_turn("c0", "q0", "en")  # committed directly; starts the checkpoint
            await holding.wait()
            async with asyncio.timeout(WAIT_BOUND_S):
                second = await store.begin_turn("c1", "q1", "en")
        assert "refused" not in caplog.text
        stored = await store.get("c1")
        assert stored is not None and stored.turns[0].question == "q1" and second > 0
    finally:
        await store.close()
