"""The chat stream's Server-Sent Events, encoded once.

`turn_frames(ev, display_language)` is the bytes of the SSE event(s) one agent event becomes
(`estimate` is followed by `display`, its panel texts; `done` carries `display` in the answer's
own language). Every agent event can go through it; the offline agent's worker processes
(`service.api.agent_pool`) encode their events there, once, and the serving process gets back
*encoded events*: ordinary `AgentEvent`s that carry their finished bytes (`frames_of`) and decode
their large fields (the Estimate, the Scenario) only if some consumer reads them. The serving
process then neither re-validates the worker's events nor builds display panels or JSON again: it
writes the bytes, splicing in the one thing it owns (the `done` payload's `conversation_id`).

An SSE event is `event: NAME\\r\\ndata: JSON\\r\\n\\r\\n` (sse_starlette's ServerSentEvent with its default
separator; the JSON has no raw line breaks, so it is one `data:` line).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, PrivateAttr
from sse_starlette import ServerSentEvent

from service.agent.asked import Asked, Source
from service.agent.events import (
    AgentEvent,
    Answer,
    AskedEvent,
    DoneEvent,
    ErrorEvent,
    EstimateEvent,
    NoticeEvent,
    ScenarioEvent,
    TokenEvent,
)
from service.agent.pieces import text_groups
from service.agent.render import display_panels
from tools.copies import instance
from tools.result import Estimate
from tools.scenario import Scenario

SEP = "\r\n"  # sse_starlette ServerSentEvent.DEFAULT_SEPARATOR


def event_payload(ev: AgentEvent) -> tuple[str, dict[str, Any]]:
    """The SSE event name and its JSON payload for one agent event."""
    if isinstance(ev, ScenarioEvent):
        return "scenario", ev.scenario.model_dump(mode="json", exclude_none=True)
    if isinstance(ev, EstimateEvent):
        return "estimate", ev.estimate.model_dump(mode="json")
    if isinstance(ev, TokenEvent):
        return "token", {"text": ev.text}
    if isinstance(ev, AskedEvent):
        return "asked", ev.model_dump(mode="json", include={"asked", "source"})
    if isinstance(ev, NoticeEvent):
        return "notice", {"message": ev.message, "code": ev.code}
    if isinstance(ev, DoneEvent):
        return "done", ev.answer.model_dump(mode="json")
    if isinstance(ev, ErrorEvent):
        return "error", {
            "error": ev.message,
            "message": ev.message,
            "field": ev.field,
            "accepted": ev.accepted,
            "suggestions": ev.suggestions,
        }
    raise TypeError(f"unknown agent event {type(ev).__name__}")


# what json.dumps(payload, ensure_ascii=False) builds on every call (a non-default option), built once; the
# payloads are trees of plain values (never circular: the check for cycles would only cost)
_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False)


def dumps(payload: Any) -> str:
    """`json.dumps(payload, ensure_ascii=False)`."""
    return _ENCODER.encode(payload)


def sse(name: str, payload: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(event=name, data=dumps(payload))


def event_bytes(name: str, payload: dict[str, Any]) -> bytes:
    """`sse(name, payload).encode()`, without ServerSentEvent's line splitting (a regex and a StringIO):
    the JSON `dumps` writes has no line break, so it is one `data:` line."""
    return _frame(name, dumps(payload)).encode()


def display_payload(estimate: Estimate, language: str) -> dict[str, Any]:
    """The `display` event: the estimate's panel texts in the answer's language (render.display_panels)."""
    return display_panels(estimate, language).model_dump(mode="json")


def turn_events(ev: AgentEvent, display_language: str) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events for one agent event: `estimate` is followed by `display` (its panel texts in
    the language the answer is expected in); `done` carries `display` in the answer's own language."""
    name, payload = event_payload(ev)
    if isinstance(ev, EstimateEvent):
        return [(name, payload), ("display", display_payload(ev.estimate, display_language))]
    if isinstance(ev, DoneEvent) and ev.answer.estimate is not None:
        payload["display"] = display_payload(ev.answer.estimate, ev.answer.language)
    return [(name, payload)]


def turn_frames(ev: AgentEvent, display_language: str) -> bytes:
    """The encoded SSE event(s) of one agent event: its own bytes when it carries them (encoded in a
    worker), else `turn_events` encoded now."""
    frames = frames_of(ev)
    if frames is not None:
        return frames
    return b"".join(sse(name, payload).encode() for name, payload in turn_events(ev, display_language))


def _frame(name: str, data: str) -> str:
    return f"event: {name}{SEP}data: {data}{SEP}{SEP}"


# ---- encoded events -------------------------------------------------------------------------------------
class _Lazy:
    """Fields decoded from JSON on first read (a field left out of the model's `__dict__` by `_built`)."""

    _lazy_types: ClassVar[dict[str, type[BaseModel]]] = {}

    def __getattr__(self, name: str) -> Any:
        if name in type(self)._lazy_types:
            private = object.__getattribute__(self, "__pydantic_private__") or {}
            raw = (private.get("_lazy_json") or {}).get(name)
            if raw is not None:
                value = None if raw == "null" else type(self)._lazy_types[name].model_validate_json(raw)
                self.__dict__[name] = value
                return value
        return super().__getattr__(name)  # type: ignore[misc]

    def _materialise(self) -> None:
        for name in type(self)._lazy_types:
            getattr(self, name)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        self._materialise()
        return super().model_dump(**kwargs)  # type: ignore[misc]

    def model_dump_json(self, **kwargs: Any) -> str:
        self._materialise()
        return super().model_dump_json(**kwargs)  # type: ignore[misc]


class EncodedScenarioEvent(_Lazy, ScenarioEvent):
    _lazy_types: ClassVar[dict[str, type[BaseModel]]] = {"scenario": Scenario}
    _lazy_json: dict[str, str] = PrivateAttr(default_factory=dict)
    _frames: bytes = PrivateAttr(b"")


class EncodedEstimateEvent(_Lazy, EstimateEvent):
    _lazy_types: ClassVar[dict[str, type[BaseModel]]] = {"estimate": Estimate}
    _lazy_json: dict[str, str] = PrivateAttr(default_factory=dict)
    _frames: bytes = PrivateAttr(b"")  # `estimate` then `display`


class EncodedTokenEvent(TokenEvent):
    _frames: bytes = PrivateAttr(b"")


class EncodedAnswer(_Lazy, Answer):
    """An Answer whose `done` event is encoded but for its `conversation_id` (set by the turn runner
    after the agent answered: the payload is spliced around it, so model_copy keeps it right)."""

    _lazy_types: ClassVar[dict[str, type[BaseModel]]] = {
        "scenario": Scenario,
        "estimate": Estimate,
        "asked": Asked,
        "source": Source,
    }
    _lazy_json: dict[str, str] = PrivateAttr(default_factory=dict)
    _head: str = PrivateAttr("")  # the payload's JSON up to the conversation_id value
    _tail: str = PrivateAttr("")  # after it: the rest of the answer (and `display`)
    # the scenario as the conversation store writes it (`scenario.model_dump_json(exclude_none=True)`, made in
    # the worker from the Scenario itself; None: no scenario), so storing the answer decodes nothing
    _stored_scenario: str | None = PrivateAttr(None)
    _has_stored_scenario: bool = PrivateAttr(False)

    def raw_json(self, name: str) -> str | None:
        """A lazy field's JSON text as the worker wrote it ('null' for none), without decoding it."""
        private = self.__pydantic_private__ or {}
        return (private.get("_lazy_json") or {}).get(name)

    def stored_scenario_json(self) -> tuple[bool, str | None]:
        """(known, the scenario's JSON as the store writes it)."""
        private = self.__pydantic_private__ or {}
        return private["_has_stored_scenario"], private["_stored_scenario"]

    def done_frame(self) -> bytes:
        private = self.__pydantic_private__ or {}
        return _frame("done", private["_head"] + dumps(self.conversation_id) + private["_tail"]).encode()


def frames_of(ev: AgentEvent) -> bytes | None:
    """The finished bytes an encoded event carries (None for an ordinary event). The private attributes are
    read from their dict: `ev._frames` would go through pydantic's `__getattr__` (a few us an event)."""
    private = ev.__pydantic_private__
    if private is not None and "_frames" in private:  # an encoded scenario, estimate or token event
        return private["_frames"]
    if isinstance(ev, DoneEvent):
        answer = ev.answer
        return answer.done_frame() if isinstance(answer, EncodedAnswer) else None
    return None


# Wire form between a worker and the serving process: plain tuples of str (cheap to pickle).
Wire = tuple[str, ...]
_TEXT, _TEXT_JSON = ("text",), ("text json",)  # encode's memo keys: the answer's text so far, its JSON


def encode(ev: AgentEvent, display_language: str, memo: dict[Any, str]) -> Wire:
    """One agent event in wire form (in a worker). `memo`, one per answer, keeps the JSON of what the
    answer's events share (its Estimate is in `estimate` and in `done`; its panel texts in `display`
    and in `done`; its text in the `token`s and in `done`), so each is built and serialised once."""

    def json_of(model: BaseModel) -> str:  # a model's `model_dump(mode="json")`, as dumps() writes it
        key = ("json", id(model))
        if key not in memo:
            memo[key] = dumps(model.model_dump(mode="json"))
        return memo[key]

    def compact_json(model: BaseModel) -> str:  # a model's `model_dump_json()` (the wire's own form)
        key = ("compact", id(model))
        if key not in memo:
            memo[key] = model.model_dump_json()
        return memo[key]

    def display_json(estimate: Estimate, language: str, rendered: dict[str, Any] | None = None) -> str:
        key = ("display", id(estimate), language)
        if key not in memo:  # the panel texts the agent rendered the answer with, when they are in `language`
            panels = rendered if rendered is not None and rendered["language"] == language else None
            memo[key] = dumps(display_payload(estimate, language) if panels is None else panels)
        return memo[key]

    if isinstance(ev, TokenEvent):
        text_json = dumps(ev.text)
        # the text so far and its JSON string's inside: JSON escapes character by character, so the JSON
        # of the answer's whole text (`done`) is the pieces' joined
        memo[_TEXT] = memo.get(_TEXT, "") + ev.text
        memo[_TEXT_JSON] = memo.get(_TEXT_JSON, "") + text_json[1:-1]
        return ("token", ev.text, _frame("token", '{"text": ' + text_json + "}"))  # dumps({"text": ...})
    if isinstance(ev, ScenarioEvent):
        data = dumps(ev.scenario.model_dump(mode="json", exclude_none=True))
        return ("scenario", compact_json(ev.scenario), _frame("scenario", data))
    if isinstance(ev, EstimateEvent):
        estimate_json = json_of(ev.estimate)
        frames = _frame("estimate", estimate_json) + _frame(
            "display", display_json(ev.estimate, display_language, ev._display)
        )
        return ("estimate", estimate_json, frames)
    if isinstance(ev, DoneEvent):
        a = ev.answer
        # the payload `dumps({**a.model_dump(mode="json"), "display": ...})` writes, assembled from the
        # JSON of its fields (json.dumps of a dict is its items' JSON joined with ", " and ": ")
        pieces: list[tuple[str, str]] = []
        for name in type(a).model_fields:
            value = getattr(a, name)
            if isinstance(value, BaseModel):
                pieces.append((name, json_of(value)))
            elif name == "answer" and memo.get(_TEXT) == value:  # the text the tokens sent
                pieces.append((name, '"' + memo[_TEXT_JSON] + '"'))
            else:
                pieces.append((name, dumps(value)))
        if a.estimate is not None:
            pieces.append(("display", display_json(a.estimate, a.language)))
        names = [name for name, _ in pieces]
        i = names.index("conversation_id")
        head = "{" + "".join(f"{dumps(k)}: {v}, " for k, v in pieces[:i]) + f"{dumps('conversation_id')}: "
        tail = "".join(f", {dumps(k)}: {v}" for k, v in pieces[i + 1 :]) + "}"
        return (
            "done",
            a.question,
            a.language,
            a.answer,
            a.agent,
            dumps(a.conversation_id),
            "null" if a.scenario is None else compact_json(a.scenario),
            "null" if a.estimate is None else json_of(a.estimate),
            head,
            tail,
            a.summary,
            "null" if a.scenario is None else a.scenario.model_dump_json(exclude_none=True),
            dumps(a.notices),
            "null" if a.asked is None else json_of(a.asked),
            "null" if a.source is None else json_of(a.source),
        )
    return ("event", ev.model_dump_json())  # notice, error: small and rare, sent as they are


M = TypeVar("M", bound=BaseModel)


def _built(cls: type[M], fields: dict[str, Any], private: dict[str, Any] | None) -> M:
    """An instance of `cls` holding `fields` (values a worker validated) and the private attributes
    `private` (None for a model without any; one of `cls` left out gets its default): what
    `cls.model_construct(**fields)` and setting each private attribute build, without model_construct's
    look-up of every field's aliases and default and of every private attribute's default (~10 us an
    event, ~9 events an answer on the serving loop). A field left out of `fields` is read lazily
    (`_Lazy`). tests/test_sse_wire.py compares the result with model_construct's."""
    declared = cls.__private_attributes__
    if private is not None and len(private) != len(declared):  # one this code does not set: its default
        private = {
            **{n: a.get_default(call_default_factory=True) for n, a in declared.items() if n not in private},
            **private,
        }
    return instance(cls, fields, set(fields), private)


def decode(wire: Wire, event_adapter: Any) -> AgentEvent:
    """An encoded event from its wire form (in the serving process): no validation of what the
    worker validated; `event_adapter` (a TypeAdapter of AgentEvent) for the small rare kinds."""
    kind = wire[0]
    if kind == "token":
        return _built(EncodedTokenEvent, {"type": "token", "text": wire[1]}, {"_frames": wire[2].encode()})
    if kind == "scenario":
        return _built(
            EncodedScenarioEvent,
            {"type": "scenario"},
            {"_lazy_json": {"scenario": wire[1]}, "_frames": wire[2].encode()},
        )
    if kind == "estimate":
        return _built(
            EncodedEstimateEvent,
            {"type": "estimate"},
            {"_lazy_json": {"estimate": wire[1]}, "_frames": wire[2].encode()},
        )
    if kind == "done":
        _, question, language, text, agent, cid, scenario, estimate, head, tail, *rest = wire
        answer = _built(
            EncodedAnswer,
            # scenario and estimate are left out: read lazily from their JSON
            {
                "question": question,
                "language": language,
                "answer": text,
                "summary": rest[0] if rest else "",
                "agent": agent,
                "conversation_id": json.loads(cid),
                "notices": json.loads(rest[2]) if len(rest) > 2 else [],
            },
            {
                "_lazy_json": {
                    "scenario": scenario,
                    "estimate": estimate,
                    "asked": rest[3] if len(rest) > 3 else "null",
                    "source": rest[4] if len(rest) > 4 else "null",
                },
                "_head": head,
                "_tail": tail,
                "_stored_scenario": None if len(rest) < 2 or rest[1] == "null" else rest[1],
                "_has_stored_scenario": len(rest) > 1,
            },
        )
        return _built(DoneEvent, {"type": "done", "answer": answer}, None)
    return event_adapter.validate_json(wire[1])


def merge_tokens(events: list[AgentEvent], max_chars: int) -> list[AgentEvent]:
    """Consecutive text events merged into pieces of at most `max_chars` (a longer single event stays whole;
    service.agent.pieces.text_groups). Each piece is joined once (not one new event per text merged into it)."""
    out: list[AgentEvent] = []
    run: list[TokenEvent] = []  # consecutive text events

    def flush() -> None:
        start = 0
        for group in text_groups([ev.text for ev in run], max_chars):
            out.append(run[start] if len(group) == 1 else TokenEvent(text="".join(group)))
            start += len(group)
        run.clear()

    for ev in events:
        if isinstance(ev, TokenEvent):
            run.append(ev)
            continue
        flush()
        out.append(ev)
    flush()
    return out
