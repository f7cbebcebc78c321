"""One turn of a conversation: validate the question, load the stored state, store the question
(`begin`: before any event is sent, status in_progress), run the agent, store how it ended (done,
error, or interrupted when the stream is torn down first). Shared by the SSE chat and the
OpenAI-compatible channel.

The event stream a runner yields always ends with exactly one DoneEvent or ErrorEvent,
whatever the agent does (stops early, raises).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, aclosing, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from service.agent.base import Agent, ConversationState, Turn
from service.agent.events import AgentEvent, DoneEvent, ErrorEvent, Language, NoticeEvent
from service.agent.offline.language import detect_language
from service.api.errors import ApiError
from service.api.sse_wire import EncodedAnswer
from service.conversation_pages import TurnCap
from service.store import ConversationStore, TurnStatus
from tools.errors import quote

if TYPE_CHECKING:
    from service.observability.answers import AnswerObserver

log = logging.getLogger(__name__)

MAX_REPLAYED_QUESTIONS = 8  # OpenAI-style history: earlier user turns re-parsed to restore the scenario


@dataclass
class PreparedTurn:
    question: str
    state: ConversationState
    language: Language | None
    conversation_id: str
    owner: str | None = None  # digest of the API key that asks (None: keys are off)
    turn_id: int | None = None  # the stored question (`TurnRunner.begin`)
    begun: bool = False

    _answer_language: Language | None = field(default=None, init=False, repr=False)

    @property
    def answer_language(self) -> Language:
        """The language the answer is expected in, by the agents' own rule (offline agent): the stated one,
        else the question's, else the conversation's (worked out once a turn: the store and the chat stream
        both need it; not a functools.cached_property, which takes a lock on Python 3.11)."""
        if self._answer_language is None:
            self._answer_language = self.language or detect_language(
                self.question, default=self.state.language or "en"
            )
        return self._answer_language


def new_conversation_id() -> str:
    return uuid.uuid4().hex


class TurnRunner:
    def __init__(
        self,
        *,
        agent: Agent,
        store: ConversationStore,
        max_message_chars: int,
        replay_agent: Agent | None = None,
        observer: AnswerObserver | None = None,
        turn_cap: TurnCap | None = None,
    ) -> None:
        self.agent = agent
        self.store = store
        self.max_message_chars = max_message_chars
        self.turn_cap = turn_cap  # questions one conversation keeps (service/conversation_pages.py)
        self.replay_agent = replay_agent or agent
        self.observer = observer  # counts and traces each turn's answer (service/observability)

    def _store_call(self, operation: str) -> AbstractContextManager[None]:
        return self.observer.store_call(operation) if self.observer is not None else nullcontext()

    # ---- validation --------------------------------------------------------------------------------
    def check_message(self, message: str, field: str = "message") -> str:
        question = message.strip()
        if not question:
            raise ApiError(
                422,
                f"{field} is empty: ask a question, e.g. 'Can I fine-tune Llama-2-7B with LoRA on a 4090?'",
                field=field,
                accepted=f"1 to {self.max_message_chars} characters",
                code="empty_message",
            )
        if len(question) > self.max_message_chars:
            raise ApiError(
                422,
                f"{field} is {len(question)} characters; the limit is {self.max_message_chars}",
                field=field,
                accepted=f"1 to {self.max_message_chars} characters",
                code="message_too_long",
            )
        return question

    # ---- preparing a turn ---------------------------------------------------------------------------
    async def prepare(
        self,
        message: str,
        *,
        conversation_id: str | None = None,
        language: Language | None = None,
        create_if_missing: bool = False,
        field: str = "message",
        owner: str | None = None,
    ) -> PreparedTurn:
        """Validate and load; unknown conversation ids (and another key's) get a 404 unless
        `create_if_missing`."""
        question = self.check_message(message, field)
        if conversation_id is None:
            cid = new_conversation_id()
            state = ConversationState(conversation_id=cid)
        else:
            with self._store_call("load_state"):
                loaded = await self.store.load_state(conversation_id, owner)
            if loaded is None and not create_if_missing:
                raise ApiError(
                    404,
                    f"unknown conversation_id '{quote(conversation_id)}': omit it to start a new conversation",
                    field="conversation_id",
                    code="conversation_not_found",
                )
            cid = conversation_id
            state = loaded or ConversationState(conversation_id=cid)
            if loaded is not None and self.turn_cap is not None:
                await self.turn_cap.check_room(cid)  # 409 conversation_full
        return PreparedTurn(
            question=question, state=state, language=language, conversation_id=cid, owner=owner
        )

    async def prepare_from_history(
        self,
        question: str,
        history: list[Turn],
        *,
        language: Language | None = None,
        field: str,
        owner: str | None = None,
    ) -> PreparedTurn:
        """A stateless client (OpenAI messages array): earlier turns become the conversation state;
        the previous scenario is restored by re-parsing earlier user questions (offline), only when
        there are any."""
        question = self.check_message(question, field)
        cid = new_conversation_id()
        state = ConversationState(conversation_id=cid, turns=list(history))
        earlier = [t.content for t in history if t.role == "user" and t.content.strip()]
        if earlier:
            state.scenario = await self._replay_scenario(earlier[-MAX_REPLAYED_QUESTIONS:], language)
        return PreparedTurn(
            question=question, state=state, language=language, conversation_id=cid, owner=owner
        )

    async def _replay_scenario(self, questions: list[str], language: Language | None):  # type: ignore[no-untyped-def]
        agent = self.replay_agent
        replay = ConversationState()
        for q in questions:
            try:
                async with aclosing(agent.stream(q[: self.max_message_chars], replay, language)) as events:
                    async for ev in events:
                        if isinstance(ev, DoneEvent):
                            replay.record_turn(q, ev.answer)
                            break
                        if isinstance(ev, ErrorEvent):
                            break
            except Exception:
                log.exception("re-parsing an earlier question failed; continuing without it")
        return replay.scenario

    # ---- running a turn -----------------------------------------------------------------------------
    async def begin(self, turn: PreparedTurn) -> None:
        """Store the question (status in_progress) before the agent runs; a store that fails is logged and
        the answer is stored at its end instead (`run` says so in a notice)."""
        if turn.begun:
            return
        turn.begun = True
        try:
            with self._store_call("begin_turn"):
                turn.turn_id = await self.store.begin_turn(
                    turn.conversation_id, turn.question, turn.answer_language, owner=turn.owner
                )
        except Exception:
            log.exception("could not store the question of conversation %s", turn.conversation_id)

    async def run(self, turn: PreparedTurn) -> AsyncIterator[AgentEvent]:
        """The agent's events, then exactly one terminal event; the answer is persisted before `done`.
        Torn down before its end (the client went away), the stored turn is marked interrupted."""
        await self.begin(turn)
        ended = False
        observed = self.observer.observe(turn) if self.observer is not None else None
        try:
            async with aclosing(self.agent.stream(turn.question, turn.state, turn.language)) as events:
                async for ev in events:
                    if observed is not None:
                        observed.see(ev)
                    if isinstance(ev, DoneEvent):
                        answer = ev.answer.model_copy(update={"conversation_id": turn.conversation_id})
                        ended = True
                        saved = await self._persist(turn, answer)
                        if not saved:
                            yield NoticeEvent(
                                message="the answer could not be saved; a follow-up may not see it",
                                code="store_unavailable",
                            )
                        yield DoneEvent(answer=answer)
                        return
                    if isinstance(ev, ErrorEvent):
                        ended = True
                        await self._finish(turn, "error", ev.message)
                        yield ev
                        return
                    yield ev
        except Exception:
            log.exception("agent %s failed on a question", getattr(self.agent, "name", "?"))
            if observed is not None:
                observed.failed()
            ended = True
            message = "internal error while answering; the details are in the service log"
            await self._finish(turn, "error", message)
            yield ErrorEvent(message=message)
            return
        finally:
            if observed is not None:
                observed.close()
            if not ended and turn.turn_id is not None:
                # torn down mid-answer (GeneratorExit / cancellation): nothing may be awaited any more
                self.store.finish_turn_soon(turn.turn_id, turn.conversation_id, "interrupted")
        message = "the agent stopped without an answer; please ask again"
        await self._finish(turn, "interrupted", message)
        yield ErrorEvent(message=message)

    async def _persist(self, turn: PreparedTurn, answer) -> bool:  # type: ignore[no-untyped-def]
        with self._store_call("finish_turn"):
            return await self._store_answer(turn, answer)

    async def _store_answer(self, turn: PreparedTurn, answer) -> bool:  # type: ignore[no-untyped-def]
        try:
            if turn.turn_id is None:  # the question could not be stored at the start: store it all now
                await self.store.append_turn(turn.conversation_id, turn.question, answer)
            else:
                known, scenario_json = (
                    answer.stored_scenario_json() if isinstance(answer, EncodedAnswer) else (False, None)
                )
                await self.store.finish_turn(
                    turn.turn_id,
                    turn.conversation_id,
                    answer=answer.answer,
                    status="done",
                    language=answer.language,
                    agent=answer.agent,
                    # an answer encoded in a worker carries the scenario's stored JSON: nothing to decode
                    scenario=None if known else answer.scenario,
                    scenario_json=scenario_json,
                )
            return True
        except Exception:
            log.exception("could not store a turn of conversation %s", turn.conversation_id)
            return False

    async def _finish(self, turn: PreparedTurn, status: TurnStatus, message: str) -> None:
        try:
            if turn.turn_id is None:
                await self.store.ensure_conversation(turn.conversation_id, turn.language)
            else:
                await self.store.finish_turn(
                    turn.turn_id,
                    turn.conversation_id,
                    answer=message,
                    status=status,
                    agent=getattr(self.agent, "name", ""),
                )
        except Exception:
            log.exception("could not store conversation %s", turn.conversation_id)
