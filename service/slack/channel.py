"""The Slack channel: slack_bolt's AsyncApp behind `POST /slack/events`, answering through the same
TurnRunner as the web chat (no second agent, no parsing, estimating or rendering of its own).

- Requests are verified by bolt (signing secret; bad or missing signature, timestamps older than
  5 minutes: 401, nothing runs). Listeners run after bolt has acknowledged (process_before_response
  off), so Slack gets its 200 at once and the answer follows.
- `/vram <question>`: ack at once (an ephemeral "Estimating: ..."), then the answer in the channel
  through the command's response_url. `/vram help`, `/vram quiz`: the subcommand registry.
- `app_mention`: answered in the thread of the message (streamed, service/slack/streaming.py); a
  mention inside a thread continues that thread's conversation. DMs: a top-level message continues
  the DM's running conversation and is answered in its thread; messages in a thread (also assistant
  threads, AsyncAssistant) continue that thread's conversation.
- Retries: each question event is claimed by its `event_id` in the store before the agent runs; a
  retried delivery finds it claimed and gets no second answer (service/slack/store.py).
- "Show formulas" posts the full cited derivation in the thread; what-if buttons ask one change (whatif.py).
- Web API calls retry on 429 (Retry-After) and connection errors; failures log Slack's request id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from slack_bolt.adapter.fastapi.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp, AsyncAssistant
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient
from starlette.requests import Request
from starlette.responses import Response

from service.agent.events import Answer, DoneEvent, ErrorEvent, NoticeEvent, TokenEvent
from service.agent.offline.language import detect_language
from service.api.errors import ApiError
from service.api.turns import TurnRunner, new_conversation_id
from service.coach.channel import coach_turn, start_quiz, thread_session
from service.coach.coach import Coach, CoachError, check_topic
from service.coach.interview.session import Interviewer
from service.settings import Settings
from service.slack import whatif
from service.slack.blocks import (
    SHOW_FORMULAS,
    answer_payload,
    formulas_messages,
    slack_section,
    slack_text,
    text_payload,
)
from service.slack.commands import Subcommands
from service.slack.gate import refusal, understood
from service.slack.interview import interview_of_thread, interview_reply, post_interview
from service.slack.paste_text import message_text
from service.slack.store import SlackStore
from service.slack.streaming import ThreadReply, action_place, request_id, slack_error

log = logging.getLogger(__name__)

COMMAND = "/vram"
DEFAULT_API_URL = "https://slack.com/api/"
RATE_LIMIT_RETRIES = 3
STREAM_BUFFER_CHARS = 256  # characters gathered before a chat.appendStream (slack_sdk's default)
UPDATE_INTERVAL_S = 1.5  # the fallback's chat.update (Tier 3: ~50 a minute)
# answers worked on at once: more only compete with the acks of a burst for the serving loop (the agent's
# own work runs in its worker processes); the others wait their turn (benchmarks/slack_load.py)
MAX_ANSWERS_AT_ONCE = 8
SHUTDOWN_WAIT_S = 10.0  # answers under way get this long to finish when the service stops


@dataclass
class Outcome:
    answer: Answer | None = None
    error: str | None = None
    language: str = "en"
    notices: list[str] = field(default_factory=list)


def api_base_url(configured: str | None) -> str:
    """The Web API base URL as slack_sdk joins it with method names (a trailing slash)."""
    url = configured or DEFAULT_API_URL
    return url if url.endswith("/") else url + "/"


class SlackChannel:
    def __init__(self, settings: Settings, runner: TurnRunner) -> None:
        assert settings.slack_bot_token and settings.slack_signing_secret
        self.settings = settings
        self.runner = runner
        self.store = SlackStore(settings.database_url)
        self.subcommands = Subcommands()
        self.subcommands.register("help", self._help, alone=True)
        self.subcommands.register("quiz", self._quiz)
        self.subcommands.register("interview", self._interview)
        self.coach: Coach | None = None  # the interview coach (set by the app): `/vram quiz`, quiz threads
        self.interviewer: Interviewer | None = (
            None  # the mock interview (set by the app), service/slack/interview.py
        )
        self.app: AsyncApp | None = None
        self._handler: AsyncSlackRequestHandler | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._answering: asyncio.Semaphore | None = None
        self._verifier = SignatureVerifier(settings.slack_signing_secret or "")

    @classmethod
    def from_settings(cls, settings: Settings, runner: TurnRunner) -> SlackChannel | None:
        """The channel when both Slack settings are given, else None (`/slack/events` answers 404)."""
        if not (settings.slack_bot_token and settings.slack_signing_secret):
            return None
        return cls(settings, runner)

    # ---- lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> None:
        await self.store.open()
        self._answering = asyncio.Semaphore(MAX_ANSWERS_AT_ONCE)
        self.app = self._build_app()
        self._handler = AsyncSlackRequestHandler(self.app)

    async def stop(self) -> None:
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=SHUTDOWN_WAIT_S)
            for task in pending:
                task.cancel()
        await self.store.close()

    async def handle(self, request: Request) -> Response:
        if self._handler is None:
            return Response("Slack channel is starting", status_code=503)
        refused = await refusal(request, self._verifier, self.store)  # service/slack/gate.py
        return refused or understood(request, await self._handler.handle(request))

    def _retry_handlers(self) -> list[Any]:
        return [
            AsyncConnectionErrorRetryHandler(),
            AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        ]

    def _build_app(self) -> AsyncApp:
        client = AsyncWebClient(
            token=self.settings.slack_bot_token,
            base_url=api_base_url(self.settings.slack_api_url),
            retry_handlers=self._retry_handlers(),
        )
        app = AsyncApp(
            client=client,
            signing_secret=self.settings.slack_signing_secret,
            process_before_response=False,
            logger=logging.getLogger("service.slack.bolt"),
        )
        app.command(COMMAND)(self._on_command)
        app.event("app_mention")(self._on_mention)
        app.event("message")(self._on_message)
        app.action(SHOW_FORMULAS)(self._on_show_formulas)
        whatif.register(app, self)
        assistant = AsyncAssistant()
        assistant.thread_started(self._on_thread_started)
        assistant.user_message(self._on_assistant_message)
        app.use(assistant)
        return app

    async def _tracked(self, work: Coroutine[Any, Any, None], what: str) -> None:
        """Run one answer, known to `stop`; a failure is logged, never raised into bolt."""
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            assert self._answering is not None
            async with self._answering:
                await work
        except Exception:
            log.exception("Slack %s failed", what)
        finally:
            if task is not None:
                self._tasks.discard(task)

    # ---- the store (an unreachable database never keeps an answer from going out) -------------------
    async def _claim(self, key: str, question: str) -> bool:
        try:
            return await self.store.claim_event(key, question)
        except Exception:
            log.exception("could not record Slack event %s; answering it without the retry check", key)
            return True

    async def _conversation(self, key: str) -> str:
        try:
            return await self.store.conversation_for(key)
        except Exception:
            log.exception("could not look up the conversation of %s; answering without its history", key)
            return new_conversation_id()

    # ---- the agent ------------------------------------------------------------------------------------
    async def _ask(
        self, question: str, conversation_id: str, on_token: Callable[[str], Awaitable[None]] | None = None
    ) -> Outcome:
        outcome = Outcome(language=detect_language(question))
        try:
            turn = await self.runner.prepare(
                question, conversation_id=conversation_id, create_if_missing=True
            )
        except ApiError as exc:
            outcome.error = exc.message
            return outcome
        async for ev in self.runner.run(turn):
            if isinstance(ev, TokenEvent) and on_token is not None:
                await on_token(ev.text)
            elif isinstance(ev, NoticeEvent):
                outcome.notices.append(ev.message)
            elif isinstance(ev, DoneEvent):
                outcome.answer = ev.answer
                outcome.language = ev.answer.language
            elif isinstance(ev, ErrorEvent):
                outcome.error = ev.message
                language = (ev.detail or {}).get("language")
                if language in ("en", "zh"):
                    outcome.language = language
        return outcome

    async def _final_payload(self, outcome: Outcome, conversation_id: str) -> dict[str, Any]:
        if outcome.answer is None:
            message = outcome.error or "no answer"
            return text_payload(slack_text(outcome.language, "error", message=message))
        answer = outcome.answer
        ref = None
        if answer.estimate is not None:
            try:
                ref = await self.store.save_answer(conversation_id, answer.language, answer.estimate)
            except Exception:  # the answer still goes out, without its button
                log.exception("could not store a Slack answer for its formulas button")
        return answer_payload(answer, notices=outcome.notices, formulas_ref=ref)

    # ---- /vram ----------------------------------------------------------------------------------------
    async def _on_command(self, ack: Any, body: dict[str, Any]) -> None:
        text = message_text({"text": body.get("text")}, None)  # one line, or a pasted code block kept
        language = detect_language(text)
        matched = self.subcommands.match(text) if text else ("help", "")
        if matched is not None:
            name, rest = matched
            message = await self.subcommands.handlers[name](rest, language, body)
            await ack(response_type="ephemeral", **message)
            return
        await ack(response_type="ephemeral", text=slack_text(language, "ack", question=text[:200]))
        await self._tracked(self._answer_command(body, text), f"command {body.get('trigger_id')}")

    async def _answer_command(self, body: dict[str, Any], question: str) -> None:
        team, channel, user = body.get("team_id"), body.get("channel_id"), body.get("user_id")
        # the question, stored first (Slack does not retry slash commands: nothing to deduplicate)
        await self._claim(f"command:{body.get('trigger_id')}", question)
        conversation_id = await self._conversation(f"command:{team}:{channel}:{user}")
        outcome = await self._ask(question, conversation_id)
        payload = await self._final_payload(outcome, conversation_id)
        await self._send_response(str(body["response_url"]), {"response_type": "in_channel", **payload})

    async def _send_response(self, url: str, message: dict[str, Any]) -> bool:
        webhook = AsyncWebhookClient(url, retry_handlers=self._retry_handlers())
        response = await webhook.send_dict(message)
        if response.status_code != 200:
            log.warning(
                "response_url answered %s: %s (request id %s)",
                response.status_code,
                response.body,
                (response.headers or {}).get("x-slack-req-id", "-"),
            )
            return False
        return True

    async def _help(self, rest: str, language: str, body: dict[str, Any]) -> dict[str, Any]:
        return text_payload(str(slack_section(language, "help").get("text", "")))

    async def _quiz(self, rest: str, language: str, body: dict[str, Any]) -> dict[str, Any]:
        """`/vram quiz [topic]`: the coach's question is posted in the channel; answers in its thread are
        graded there (`_coach_reply`)."""
        if self.coach is None:
            return text_payload(slack_text(language, "coach_unavailable"))
        try:
            topic = check_topic(rest.split()[0] if rest else None)
        except CoachError as e:
            near = f" ({', '.join(e.suggestions)}?)" if e.suggestions else ""
            return text_payload(
                slack_text(language, "coach_bad_topic", topic=rest, near=near, accepted=e.accepted)
            )
        task = asyncio.create_task(self._tracked(self._post_quiz(body, topic, language), "quiz"))
        self._tasks.add(task)
        return text_payload(slack_text(language, "coach_started"))

    async def _post_quiz(self, body: dict[str, Any], topic: str | None, language: str) -> None:
        assert self.coach is not None and self.app is not None
        team, channel = body.get("team_id"), str(body.get("channel_id"))
        session_id, question = await start_quiz(self.coach, topic, language)
        response = await self.app.client.chat_postMessage(channel=channel, **text_payload(question))
        await self.coach.store.link_thread(f"{team}:{channel}:{response['ts']}", session_id)

    async def _interview(self, rest: str, language: str, body: dict[str, Any]) -> dict[str, Any]:
        """`/vram interview`: the first question is posted in the channel, the interview runs in its thread."""
        if self.interviewer is None or self.app is None:
            return text_payload(slack_text(language, "interview_unavailable"))
        work = post_interview(self.interviewer, self.app.client, body, language)
        self._tasks.add(asyncio.create_task(self._tracked(work, "interview")))
        return text_payload(slack_text(language, "interview_started"))

    async def _coach_session(self, team_id: str | None, channel: str, thread_ts: str | None) -> str | None:
        if self.coach is None or not thread_ts:
            return None
        return await thread_session(self.coach, f"{team_id}:{channel}:{thread_ts}")

    # ---- mentions, DMs, assistant threads --------------------------------------------------------------
    async def _on_mention(
        self, event: dict[str, Any], body: dict[str, Any], client: AsyncWebClient, context: Any
    ) -> None:
        channel = str(event["channel"])
        root = str(event.get("thread_ts") or event["ts"])
        team = body.get("team_id") or event.get("team")
        question = message_text(event, context.get("bot_user_id"))
        await self._tracked(
            self._answer_in_thread(
                client,
                event_key=str(body.get("event_id") or f"{channel}:{event['ts']}"),
                question=question,
                channel=channel,
                thread_ts=root,
                conversation_key=f"{team}:{channel}:{root}",
                team_id=team,
                user_id=event.get("user"),
            ),
            f"mention {body.get('event_id')}",
        )

    async def _on_message(
        self, event: dict[str, Any], body: dict[str, Any], client: AsyncWebClient, context: Any
    ) -> None:
        """Direct messages at the top of the DM (threaded ones reach `_on_assistant_message`); in a channel,
        only the replies in a quiz thread (a mention there comes as `app_mention` too: answered there)."""
        if event.get("bot_id") or event.get("subtype") not in (
            None,
            "file_share",
        ):  # a shared snippet is read
            return
        if event.get("channel_type") != "im":
            bot = context.get("bot_user_id")
            if bot and f"<@{bot}>" in str(event.get("text") or ""):
                return
            team = body.get("team_id") or event.get("team")
            where = (team, str(event["channel"]), event.get("thread_ts"))
            if (
                await self._coach_session(*where) is None
                and await interview_of_thread(self.interviewer, *where) is None
            ):
                return
            await self._tracked(
                self._answer_in_thread(
                    client,
                    event_key=str(body.get("event_id") or f"{event['channel']}:{event['ts']}"),
                    question=str(event.get("text") or "").strip(),
                    channel=str(event["channel"]),
                    thread_ts=str(event["thread_ts"]),
                    conversation_key=f"{team}:{event['channel']}:{event['thread_ts']}",
                    team_id=team,
                    user_id=event.get("user"),
                ),
                f"quiz answer {body.get('event_id')}",
            )
            return
        channel = str(event["channel"])
        team = body.get("team_id") or event.get("team")
        thread = event.get("thread_ts")
        if thread is None:  # the DM's running conversation; its thread (where the answer goes) joins it
            conversation_key = f"{team}:{channel}:dm"
            cid = await self._conversation(conversation_key)
            with contextlib.suppress(Exception):  # without the link a reply in the thread starts afresh
                await self.store.link(f"{team}:{channel}:{event['ts']}", cid)
        else:
            conversation_key = f"{team}:{channel}:{thread}"
        await self._tracked(
            self._answer_in_thread(
                client,
                event_key=str(body.get("event_id") or f"{channel}:{event['ts']}"),
                question=message_text(event, context.get("bot_user_id")),
                channel=channel,
                thread_ts=str(thread or event["ts"]),
                conversation_key=conversation_key,
                team_id=team,
                user_id=event.get("user"),
            ),
            f"message {body.get('event_id')}",
        )

    async def _on_assistant_message(
        self, payload: dict[str, Any], body: dict[str, Any], client: AsyncWebClient, context: Any
    ) -> None:
        await self._on_message(payload, body, client, context)

    async def _on_thread_started(self, say: Any, set_suggested_prompts: Any) -> None:
        language = "en"
        await say(slack_text(language, "thread_greeting"))
        prompts = slack_section(language, "prompts")
        await set_suggested_prompts(
            prompts=[{"title": t, "message": m} for t, m in prompts.get("items", [])],
            title=prompts.get("title"),
        )

    async def _answer_in_thread(
        self,
        client: AsyncWebClient,
        *,
        event_key: str,
        question: str,
        channel: str,
        thread_ts: str,
        conversation_key: str,
        team_id: str | None,
        user_id: str | None,
    ) -> None:
        if not await self._claim(event_key, question):  # the question, stored before anything runs
            log.info("Slack event %s was already received: not answered again", event_key)
            return
        interview = await interview_of_thread(self.interviewer, team_id, channel, thread_ts)
        if interview is not None and self.interviewer is not None:  # an interview thread: answered here
            reply = await interview_reply(self.interviewer, interview, question)
            await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **text_payload(reply))
            return
        session = await self._coach_session(team_id, channel, thread_ts)
        if session is not None and self.coach is not None:  # a quiz thread: the answer is graded here
            reply = await coach_turn(self.coach, session, question)
            await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **text_payload(reply))
            return
        language = detect_language(question)
        matched = self.subcommands.match(question) if question else ("help", "")
        if matched is not None:
            name, rest = matched
            message = await self.subcommands.handlers[name](
                rest, language, {"team_id": team_id, "channel_id": channel, "user_id": user_id}
            )
            await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **message)
            return
        conversation_id = await self._conversation(conversation_key)
        reply = ThreadReply(
            client,
            channel=channel,
            thread_ts=thread_ts,
            team_id=team_id,
            user_id=user_id,
            language=language,
            buffer_chars=STREAM_BUFFER_CHARS,
            update_interval_s=UPDATE_INTERVAL_S,
        )
        await reply.set_status()
        outcome = await self._ask(question, conversation_id, on_token=reply.append)
        await reply.finish(await self._final_payload(outcome, conversation_id))

    # ---- "Show formulas" --------------------------------------------------------------------------------
    async def _on_show_formulas(
        self, ack: Any, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        await self._tracked(self._post_formulas(body, action, client), f"formulas {action.get('value')}")

    async def _post_formulas(
        self, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        channel, thread_ts = action_place(body)
        message = body.get("message") or {}
        stored = await self.store.answer(str(action.get("value") or ""))
        if stored is None:
            language = detect_language(str(message.get("text") or ""))
            messages = [text_payload(slack_text(language, "formulas_gone"))]
        else:
            messages = formulas_messages(stored.estimate, stored.language)
        for payload in messages:
            try:
                await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **payload)
            except SlackApiError as exc:  # e.g. the bot is not in the channel of a /vram answer
                log.warning(
                    "posting formulas in %s failed: %s (request id %s); answering through response_url",
                    channel,
                    slack_error(exc),
                    request_id(exc),
                )
                url = body.get("response_url")
                if not url:
                    return
                await self._send_response(
                    str(url),
                    {
                        "response_type": "in_channel",
                        "replace_original": False,
                        "thread_ts": thread_ts,
                        **payload,
                    },
                )
