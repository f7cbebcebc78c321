"""Events encoded once in a worker (service/api/sse_wire.py): the same bytes as encoding them in the
serving process, the same Answer for the store and the other channels, and 50 ms chunking."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from pydantic import TypeAdapter

from service.agent.base import ConversationState
from service.agent.events import AgentEvent, DoneEvent, EstimateEvent, ScenarioEvent, TokenEvent
from service.agent.offline.agent import OfflineAgent
from service.agent.pieces import text_groups
from service.agent.render import display_panels, display_texts
from service.api import sse_wire
from service.api.agent_pool import coalesce_tokens
from service.api.streaming import ready_batches
from service.hub import estimate_any_model
from tools.scenario import Scenario

ADAPTER = TypeAdapter(AgentEvent)
QUESTIONS = [
    "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?",  # does not fit: suggestions
    "Qwen2.5-7B inference with 8k context, batch 8, on an A100 80GB",  # serving capacity
    "用一张 4090 跑 Llama-2-7B 推理需要多少显存？",
    "what is gradient checkpointing?",  # concept: no estimate
    "Can I run Llama-9-999B on a 4090?",  # unknown model: error event
]


@pytest.fixture(scope="module")
def agent() -> OfflineAgent:
    return OfflineAgent()


async def _events(agent: OfflineAgent, question: str, state: ConversationState) -> list[AgentEvent]:
    return coalesce_tokens([ev async for ev in agent.stream(question, state)])


def _generic(events: list[AgentEvent], language: str) -> bytes:
    return b"".join(
        sse_wire.sse(name, payload).encode()
        for ev in events
        for name, payload in sse_wire.turn_events(ev, language)
    )


@pytest.mark.parametrize("question", QUESTIONS)
async def test_encoded_events_are_the_same_bytes(agent: OfflineAgent, question: str) -> None:
    state = ConversationState(conversation_id="c-1")
    events = await _events(agent, question, state)
    language = "zh" if "显存" in question else "en"
    memo: dict[object, str] = {}
    wires = [sse_wire.encode(ev, language, memo) for ev in events]
    assert all(isinstance(part, str) for wire in wires for part in wire)  # plain strings cross the pipe
    decoded = [sse_wire.decode(w, ADAPTER) for w in wires]
    assert b"".join(sse_wire.turn_frames(ev, language) for ev in decoded) == _generic(events, language)
    for old, new in zip(events, decoded, strict=True):
        assert old.type == new.type
        if isinstance(old, EstimateEvent):
            assert new.estimate == old.estimate  # decoded on first read, equal to the worker's
        if isinstance(old, ScenarioEvent):
            assert new.scenario == old.scenario
        if isinstance(old, TokenEvent):
            assert new.text == old.text


@pytest.mark.parametrize(
    "scenario",
    [
        {"model": "llama-2-7b", "task": "lora", "gpu": "4090"},  # suggestions, assumptions, notes
        {"model": "qwen2.5-7b", "task": "inference", "gpu": "a100-80gb", "seq_len": 8192},  # serving lines
        {"model": "llama-2-13b", "task": "full_finetune", "gpu": "a100-80gb", "num_gpus": 8, "zero_stage": 3},
        {"model": "qwen2.5-7b", "task": "grpo", "gpu": "h100", "num_gpus": 8},  # RL: components with roles
    ],
)
def test_display_texts_are_the_display_models_json(scenario: dict[str, object]) -> None:
    """The worker sends the panel texts as made (render.display_texts), never building the model: the same
    JSON, key for key and in order, as the validated `Display` dumped."""
    estimate = estimate_any_model(Scenario.model_validate(scenario))
    for language in ("en", "zh"):
        texts = display_texts(estimate, language)
        dumped = display_panels(estimate, language).model_dump(mode="json")
        assert json.dumps(texts, ensure_ascii=False) == json.dumps(dumped, ensure_ascii=False)
        assert texts["components"] and texts["assumptions"]


def test_text_groups_fill_each_piece_while_the_next_text_fits() -> None:
    texts = ["aaa", "bbb", "ccccc", "d" * 20, "e", "f"]
    assert text_groups(texts, 6) == [["aaa", "bbb"], ["ccccc"], ["d" * 20], ["e", "f"]]
    assert text_groups(texts, 1) == [[t] for t in texts]
    assert text_groups([], 6) == []


@pytest.mark.parametrize("question", [*QUESTIONS, "what about 3 epochs?"])
@pytest.mark.parametrize("piece_chars", [1, 80, 400, 1024])
def test_the_agents_text_pieces_are_its_line_events_merged(
    agent: OfflineAgent, question: str, piece_chars: int
) -> None:
    """The worker asks the offline agent for its text in pieces: the same events as its line-by-line
    stream merged by the chat stream's rule, for an estimate, a concept, an error and a follow-up."""
    first = ConversationState(conversation_id="c-1")
    followup = ConversationState(conversation_id="c-2", scenario=Scenario(model="llama-2-7b", gpu="4090"))
    for state in (first, followup):
        lines = list(agent.events(question, state))
        assert sum(isinstance(ev, TokenEvent) for ev in lines) > 1 or lines[-1].type == "error"
        pieces = list(agent.events(question, state, piece_chars=piece_chars))
        merged = sse_wire.merge_tokens(lines, piece_chars)
        assert [ev.model_dump_json() for ev in pieces] == [ev.model_dump_json() for ev in merged]


async def test_done_keeps_the_conversation_id_the_runner_sets(agent: OfflineAgent) -> None:
    events = await _events(agent, QUESTIONS[0], ConversationState(conversation_id="worker-id"))
    done = sse_wire.decode(sse_wire.encode(events[-1], "en", {}), ADAPTER)
    assert isinstance(done, DoneEvent)
    # what TurnRunner does: copy the answer with the turn's id, wrap it in a new DoneEvent
    answer = done.answer.model_copy(update={"conversation_id": 'turn "id" 对话'})
    frame = sse_wire.turn_frames(DoneEvent(answer=answer), "en")
    name, data = frame.decode().split("\r\n")[:2]
    assert name == "event: done"
    payload = json.loads(data.removeprefix("data: "))
    assert payload["conversation_id"] == 'turn "id" 对话'
    original = events[-1].answer
    assert (
        answer.scenario == original.scenario and answer.estimate == original.estimate
    )  # what the store reads
    assert answer.answer == original.answer and answer.language == original.language
    # the scenario as the store writes it travels with the answer (nothing to decode to store it)
    assert answer.stored_scenario_json() == (True, original.scenario.model_dump_json(exclude_none=True))
    dumped = answer.model_dump(mode="json")  # every field, decoded on demand
    assert dumped == {**original.model_dump(mode="json"), "conversation_id": 'turn "id" 对话'}
    assert payload == {**dumped, "display": payload["display"]}


def _constructed(ev: object) -> object:
    """What `sse_wire.decode` built before `_built`: model_construct with the fields it holds, then each
    private attribute set (a lazily read field left out of `__dict__`)."""
    cls = type(ev)
    ref = cls.model_construct(**ev.__dict__)  # type: ignore[attr-defined]
    for name in getattr(cls, "_lazy_types", {}):
        if name not in ev.__dict__:  # type: ignore[attr-defined]
            ref.__dict__.pop(name, None)
    for name, value in (ev.__pydantic_private__ or {}).items():  # type: ignore[attr-defined]
        setattr(ref, name, value)
    return ref


@pytest.mark.parametrize("question", QUESTIONS)
async def test_decoded_events_hold_what_model_construct_builds(agent: OfflineAgent, question: str) -> None:
    events = await _events(agent, question, ConversationState(conversation_id="c-1"))
    memo: dict[object, str] = {}
    for wire in [sse_wire.encode(ev, "en", memo) for ev in events]:
        ev = sse_wire.decode(wire, ADAPTER)
        models = [ev, ev.answer] if isinstance(ev, DoneEvent) else [ev]
        for model in models:
            ref = _constructed(model)
            assert type(ref) is type(model)
            assert list(model.__dict__.items()) == list(ref.__dict__.items())  # type: ignore[attr-defined]
            assert model.__pydantic_fields_set__ == ref.__pydantic_fields_set__  # type: ignore[attr-defined]
            assert model.__pydantic_extra__ == ref.__pydantic_extra__  # type: ignore[attr-defined]
            assert model.__pydantic_private__ == ref.__pydantic_private__  # type: ignore[attr-defined]
            # every private attribute the class declares is there (one left out gets its default)
            assert set(model.__pydantic_private__ or {}) == set(type(model).__private_attributes__)


@pytest.mark.parametrize(
    "payload",
    [
        {"conversation_id": "c-1", "agent": "offline"},
        {"conversation_id": 'a "quoted"\nline\r\nand\rmore \u2028 \u0085 对话 \\', "agent": "llm->offline"},
        {"text": "", "nested": {"list": [1, 2.5, None, True]}},
    ],
)
def test_event_bytes_are_what_sse_starlette_writes(payload: dict[str, object]) -> None:
    assert sse_wire.event_bytes("meta", payload) == sse_wire.sse("meta", payload).encode()


async def test_ready_batches_window_groups_what_arrives_within_it() -> None:
    async def source() -> AsyncIterator[int]:
        yield 1
        await asyncio.sleep(0.01)
        yield 2  # within the 100 ms window of 1: same batch
        await asyncio.sleep(0.25)
        yield 3  # after it: a batch of its own, ended by the source's end
        yield 4

    batches = [b async for b in ready_batches(source(), window_s=0.1)]
    assert batches == [[1, 2], [3, 4]]


async def test_ready_batches_window_ends_with_the_source_and_passes_its_error_on() -> None:
    async def source() -> AsyncIterator[int]:
        yield 1
        yield 2
        await asyncio.sleep(0.01)
        raise ValueError("agent failed")  # ends the window at once: no wait for the rest of it

    batches: list[list[int]] = []
    start = asyncio.get_running_loop().time()
    with pytest.raises(ValueError, match="agent failed"):
        async for batch in ready_batches(source(), window_s=5.0):
            batches.append(batch)
    assert batches == [[1, 2]]
    assert asyncio.get_running_loop().time() - start < 4.0


async def test_ready_batches_closed_early_stops_the_source() -> None:
    stopped = asyncio.Event()

    async def source() -> AsyncIterator[int]:
        try:
            yield 1
            await asyncio.sleep(60)
            yield 2
        finally:
            stopped.set()

    batches = ready_batches(source(), window_s=0.01)
    assert await anext(batches) == [1]
    await batches.aclose()  # the client went away: the source is closed, not left waiting
    async with asyncio.timeout(5):
        await stopped.wait()


async def test_event_stream_pings_an_idle_stream_and_ends_it() -> None:
    from service.api.streaming import PING, EventStream

    sent: list[dict[str, object]] = []
    never = asyncio.Event()

    async def receive() -> dict[str, str]:
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def chunks() -> AsyncIterator[bytes]:
        yield b"event: meta\r\ndata: {}\r\n\r\n"
        await asyncio.sleep(0.35)  # idle for 3.5 ping intervals
        yield b"event: done\r\ndata: {}\r\n\r\n"

    await EventStream(chunks(), ping_s=0.1, headers={"Cache-Control": "no-cache"})({}, receive, send)
    assert sent[0]["type"] == "http.response.start"
    headers = dict(sent[0]["headers"])  # type: ignore[arg-type]
    assert headers[b"content-type"] == b"text/event-stream; charset=utf-8"
    assert headers[b"cache-control"] == b"no-cache" and headers[b"x-accel-buffering"] == b"no"
    bodies = [m["body"] for m in sent[1:]]
    assert bodies[0].startswith(b"event: meta") and bodies[-2].startswith(b"event: done")  # type: ignore[union-attr]
    assert 2 <= bodies.count(PING) <= 4  # every ~0.1 s of the 0.35 s without data
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


async def test_event_stream_stops_the_source_when_the_client_leaves() -> None:
    from service.api.streaming import EventStream

    sent: list[dict[str, object]] = []
    closed = asyncio.Event()

    async def receive() -> dict[str, str]:
        await asyncio.sleep(0.05)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def chunks() -> AsyncIterator[bytes]:
        try:
            yield b"event: meta\r\ndata: {}\r\n\r\n"
            await asyncio.sleep(30)  # an LLM that would go on
            yield b"never sent"
        finally:
            closed.set()

    loop = asyncio.get_running_loop()
    start = loop.time()
    await EventStream(chunks(), ping_s=0)({}, receive, send)
    assert loop.time() - start < 5 and closed.is_set()  # returned at once, the source closed
    assert [m.get("body") for m in sent[1:]] == [b"event: meta\r\ndata: {}\r\n\r\n"]  # no final message


@pytest.mark.slow
def test_slack_answers_from_the_worker_pool_with_the_same_figures(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The Slack channel reads `answer.estimate` of the pool's encoded answers (decoded on first read)."""
    import httpx

    from service.app import create_app
    from tests.fakes.slack_api import FakeSlack
    from tests.service_support import live_server, offline_settings
    from tests.slack_support import BOT_TOKEN, SIGNING_SECRET, command_form, post_form, total_of

    fake = FakeSlack()
    with fake.running():
        settings = offline_settings(
            tmp_path / "store.sqlite3",
            agent_processes=1,
            slack_bot_token=BOT_TOKEN,
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=fake.api_url,
        )
        with live_server(create_app(settings)) as base, httpx.Client(timeout=30) as client:
            url = fake.response_url("pool-answer")
            form = command_form("Can I fine-tune llama-2-7b with QLoRA on one 4090?", url, channel="C0POOL")
            assert post_form(client, base, form).status_code == 200
            posted = fake.wait_for(
                lambda f: [c for c in f.of("response_url") if c.path.endswith("pool-answer")]
            )
    expected = total_of(model="llama-2-7b", task="qlora", gpu="4090", num_gpus=1)
    message = posted[0].body
    assert expected == "6.34 GiB" and f"**{expected}**" in message["blocks"][0]["text"]
    table = next(b for b in message["blocks"] if b["type"] == "table")
    assert [c["text"] for c in table["rows"][-1]][1] == expected
    assert any(
        b["type"] == "actions" for b in message["blocks"]
    )  # the stored estimate behind "Show formulas"


async def test_event_stream_ends_the_body_with_the_last_chunk() -> None:
    """A `LastChunk` goes out with `more_body: False` (one write, no empty end after it); the server then
    answers `receive` with a disconnect (as uvicorn does once the response is complete), which does not
    cancel the rest of the source, and nothing the source yields after it is sent."""
    from service.api.streaming import EventStream, LastChunk

    sent: list[dict[str, object]] = []
    complete = asyncio.Event()
    drained: list[bool] = []

    async def receive() -> dict[str, str]:
        await complete.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            complete.set()

    async def chunks() -> AsyncIterator[bytes]:
        yield b"event: meta\r\ndata: {}\r\n\r\n"
        yield LastChunk(b"event: done\r\ndata: {}\r\n\r\n")
        await asyncio.sleep(0.05)  # the listener sees the disconnect meanwhile
        yield b"never sent"
        drained.append(True)

    await EventStream(chunks(), ping_s=0.01)({}, receive, send)
    assert [m.get("body") for m in sent[1:]] == [
        b"event: meta\r\ndata: {}\r\n\r\n",
        b"event: done\r\ndata: {}\r\n\r\n",
    ]
    assert [m.get("more_body") for m in sent[1:]] == [True, False]
    assert drained == [True]  # the source ran to its end: not cancelled by the server's disconnect
