"""The offline agent's worker processes (service/api/agent_pool.py): answers over each worker's socket pair
equal the in-process answer, questions spread over the workers, a worker's exception reaches the caller,
and a worker killed with questions in flight is replaced and they are answered."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from service.agent.base import ConversationState
from service.agent.offline.agent import OfflineAgent
from service.agent.offline.language import detect_language
from service.api import agent_pool, sse_wire
from service.api.agent_pool import ProcessPoolAgent
from service.settings import Settings

QUESTIONS = [
    "Can I run Llama-2-7B inference on one RTX 4090?",
    "用一张 4090 跑 Llama-2-7B 推理需要多少显存？",
    "Full fine-tune of Llama-2-13B with AdamW on 8 A100 80GB with ZeRO-3",
    "what is gradient checkpointing?",
]


@pytest.fixture
async def pool() -> ProcessPoolAgent:
    settings = Settings(agent="offline", openai_api_key=None, openai_base_url=None)
    agent = ProcessPoolAgent(settings.model_dump(), workers=2)
    await agent.start()
    try:
        yield agent
    finally:
        await agent.stop()


async def _in_process(question: str) -> list[tuple[str, ...]]:
    """What a worker sends back, made here: the offline agent's events, text coalesced, each encoded."""
    state = ConversationState(conversation_id="c")
    events = agent_pool.coalesce_tokens([ev async for ev in OfflineAgent().stream(question, state)])
    memo: dict[object, str] = {}
    return [sse_wire.encode(ev, detect_language(question, default="en"), memo) for ev in events]


async def test_concurrent_answers_equal_the_in_process_ones_and_use_every_worker(
    pool: ProcessPoolAgent,
) -> None:
    assert len(pool.worker_pids()) == 2
    asked = QUESTIONS * 10
    busy: set[int] = set()

    async def one(question: str) -> list[tuple[str, ...]]:
        task = asyncio.ensure_future(pool._answer(question, ConversationState(conversation_id="c"), None))
        await asyncio.sleep(0)
        busy.update(w.pid for w in pool._pool if w.pending)
        return await task

    answers = await asyncio.gather(*(one(q) for q in asked))
    expected = {q: await _in_process(q) for q in QUESTIONS}
    assert all(a == expected[q] for q, a in zip(asked, answers, strict=True))
    assert busy == set(pool.worker_pids())  # both workers had questions in flight
    assert all(not w.pending for w in pool._pool)


async def test_a_workers_exception_reaches_the_caller(pool: ProcessPoolAgent) -> None:
    with pytest.raises(AttributeError):  # no state: the agent fails reading it, in the worker
        await pool._answer("Can I run Llama-2-7B inference on one RTX 4090?", None, None)  # type: ignore[arg-type]
    assert len(pool.worker_pids()) == 2  # the worker lives on


async def test_questions_in_flight_on_a_killed_worker_are_answered_by_its_replacement(
    pool: ProcessPoolAgent,
) -> None:
    before = pool.worker_pids()
    questions = [asyncio.ensure_future(pool._answer(q, ConversationState(), None)) for q in QUESTIONS * 4]
    await asyncio.sleep(0)  # written to the workers' sockets
    os.kill(before[0], signal.SIGKILL)
    answers = await asyncio.wait_for(asyncio.gather(*questions), 60)
    assert all(a[-1][0] == "done" for a in answers)
    await pool._answer(QUESTIONS[0], ConversationState(), None)  # the pool is whole again for the next one
    after = pool.worker_pids()
    assert len(after) == 2 and before[0] not in after and before[1] in after


async def _until(condition, timeout_s: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.005)


async def test_a_question_outlives_each_worker_it_was_given_to_dying(pool: ProcessPoolAgent) -> None:
    """Workers killed together: each can be picked while its process is still exiting, and each such pick
    fails. The question goes to the first worker, which dies; its retry goes to the second, which dies
    too (both held stopped until picked, so the order is certain); the third try, on a new worker, answers."""
    first, second = list(pool._pool)
    for w in (first, second):
        os.kill(w.pid, signal.SIGSTOP)  # alive but not reading: the question waits in its socket
    task = asyncio.ensure_future(pool._answer(QUESTIONS[0], ConversationState(), None))
    await _until(lambda: bool(first.pending or second.pending))
    asked, other = (first, second) if first.pending else (second, first)
    # the retry's pick: of [other, the one spawned in the dead one's place], round robin turns `_next` 1 -> 0
    pool._next = 1
    os.kill(asked.pid, signal.SIGKILL)
    await _until(lambda: bool(other.pending))  # the retry went to the other worker
    os.kill(other.pid, signal.SIGKILL)
    answer = await asyncio.wait_for(task, 60)
    assert answer[-1][0] == "done"
    pids = pool.worker_pids()
    assert len(pids) == 2 and first.pid not in pids and second.pid not in pids
