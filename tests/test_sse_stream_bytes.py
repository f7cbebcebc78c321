"""The chat stream's bytes end to end: what a real uvicorn sends for `POST /v1/chat` (the offline agent in
its worker processes, events encoded there once, batched writes, the body ended with the last batch) is,
byte for byte, the generic encoding of the same answer: `meta`, then sse_starlette's ServerSentEvent of each
event the in-process OfflineAgent yields for the same question and conversation state (text coalesced as
the workers do), `done` with the stored conversation's id. English, Chinese, and a follow-up that reads the
stored conversation."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from service.agent.base import ConversationState
from service.agent.offline.agent import OfflineAgent
from service.agent.offline.language import detect_language
from service.api import sse_wire
from service.api.agent_pool import coalesce_tokens
from service.app import create_app
from service.store import ConversationStore
from tests.service_support import live_server, offline_settings, reset_sse_exit_flag

__all__ = ["reset_sse_exit_flag"]  # autouse fixture

FIRST = [
    ("Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?", "en"),  # does not fit: suggestions
    ("用一张 4090 跑 Llama-2-7B 推理需要多少显存？", "zh"),
    ("Qwen2.5-7B inference with 8k context, batch 8, on an A100 80GB", "en"),  # serving capacity
    ("what is gradient checkpointing?", "en"),  # concept: no estimate
]
FOLLOW_UP = "what about with a batch of 4?"


def _stream(base: str, body: dict[str, str]) -> bytes:
    with httpx.stream("POST", f"{base}/v1/chat", json=body, timeout=60) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        return resp.read()


async def _generic(question: str, state: ConversationState, conversation_id: str) -> bytes:
    """The same answer through the generic encoder (`sse_wire.turn_events` + ServerSentEvent.encode)."""
    events = coalesce_tokens([ev async for ev in OfflineAgent().stream(question, state)])
    language = detect_language(question, default=state.language or "en")  # the chat stream's display language
    frames = [sse_wire.sse("meta", {"conversation_id": conversation_id, "agent": "offline"}).encode()]
    for ev in events:
        if ev.type == "done":
            ev = ev.model_copy(
                update={"answer": ev.answer.model_copy(update={"conversation_id": conversation_id})}
            )
        frames += [
            sse_wire.sse(name, payload).encode() for name, payload in sse_wire.turn_events(ev, language)
        ]
    return b"".join(frames)


async def _stored(url: str, conversation_id: str) -> ConversationState:
    store = ConversationStore(url)
    await store.open()
    try:
        state = await store.load_state(conversation_id)
    finally:
        await store.close()
    assert state is not None
    return state


@pytest.mark.parametrize(("question", "language"), FIRST)
def test_streamed_bytes_are_the_generic_encoding(tmp_path: Path, question: str, language: str) -> None:
    settings = offline_settings(tmp_path / "bytes.sqlite3", agent_processes=1)
    with live_server(create_app(settings)) as base:
        first = _stream(base, {"message": question})
        meta = first.split(b"\r\n\r\n", 1)[0].decode()
        conversation_id = meta.split('"conversation_id": "', 1)[1].split('"', 1)[0]
        expected = asyncio.run(
            _generic(question, ConversationState(conversation_id=conversation_id), conversation_id)
        )
        assert first == expected
        assert first.endswith(b"\r\n\r\n") and first.count(b"event: done\r\n") == 1

        state = asyncio.run(_stored(settings.database_url, conversation_id))
        assert state.turns and state.turns[0].content == question
        follow_up = _stream(base, {"message": FOLLOW_UP, "conversation_id": conversation_id})
        assert follow_up == asyncio.run(_generic(FOLLOW_UP, state, conversation_id))
        # one terminal event (after the concept question there is no model to change: an error event)
        assert follow_up.count(b"event: done\r\n") + follow_up.count(b"event: error\r\n") == 1
