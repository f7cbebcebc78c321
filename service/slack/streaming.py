"""One answer written into a Slack thread while the agent produces it.

Streamed with Slack's streaming messages (slack_sdk's `AsyncWebClient.chat_stream` helper:
chat.startStream / chat.appendStream / chat.stopStream, appends batched by its buffer) and finished
by replacing the streamed text with the Block Kit message (chat.update on the stream's ts). Where
Slack refuses the stream (an error from chat.startStream) the reply falls back to a placeholder
chat.postMessage updated with chat.update, at most once per `update_interval_s` (chat.update is a
Tier 3 method); a stream that died on the way (`message_not_in_streaming_state` after ~5 minutes) is
finished the same way, by chat.update on its ts. 429s are waited out by the client's
AsyncRateLimitErrorRetryHandler (service/slack/channel.py). Errors are logged with Slack's request id.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from service.slack import limits
from service.slack.blocks import markdown_block, mrkdwn, slack_text

log = logging.getLogger(__name__)


def request_id(exc: BaseException) -> str:
    """Slack's id of a failed call (the `x-slack-req-id` response header), for the log."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    for key, value in dict(headers).items():
        if str(key).lower() == "x-slack-req-id":
            return str(value[0] if isinstance(value, list) else value)
    return "-"


def slack_error(exc: SlackApiError) -> str:
    try:
        return str(exc.response.get("error") or exc)
    except Exception:
        return str(exc)


class ThreadReply:
    def __init__(
        self,
        client: AsyncWebClient,
        *,
        channel: str,
        thread_ts: str,
        team_id: str | None,
        user_id: str | None,
        language: str,
        buffer_chars: int = 256,
        update_interval_s: float = 1.5,
    ) -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.team_id = team_id
        self.user_id = user_id
        self.language = language
        self.buffer_chars = buffer_chars
        self.update_interval_s = update_interval_s
        self.mode = "stream"  # "stream", then "update" once the fallback took over
        self.ts: str | None = None  # the reply's message ts
        self._stream: Any = None
        self._text = ""
        self._streamed_chars = 0
        self._last_update = 0.0

    async def set_status(self) -> None:
        """The thread's "estimating..." status while the tool runs (cleared by Slack at the reply)."""
        try:
            await self.client.assistant_threads_setStatus(
                channel_id=self.channel, thread_ts=self.thread_ts, status=slack_text(self.language, "status")
            )
        except SlackApiError as exc:  # e.g. not an assistant thread: the answer goes on without it
            log.info(
                "assistant.threads.setStatus refused: %s (request id %s)", slack_error(exc), request_id(exc)
            )

    async def append(self, text: str) -> None:
        self._text += text
        if self.mode == "stream":
            await self._append_stream(text)
        else:
            await self._update_placeholder(final=False)

    async def _append_stream(self, text: str) -> None:
        room = limits.MAX_STREAM_MARKDOWN - self._streamed_chars
        piece = text[: max(room, 0)]
        if not piece:  # the stream holds what one message can; the final message replaces it anyway
            return
        try:
            if self._stream is None:
                self._stream = await self.client.chat_stream(
                    channel=self.channel,
                    thread_ts=self.thread_ts,
                    recipient_team_id=self.team_id,
                    recipient_user_id=self.user_id,
                    buffer_size=self.buffer_chars,
                )
            await self._stream.append(markdown_text=piece)
            self._streamed_chars += len(piece)
            self.ts = self._stream.ts or self.ts
        except SlackApiError as exc:
            log.warning(
                "streaming into %s refused (%s, request id %s); posting and updating instead",
                self.channel,
                slack_error(exc),
                request_id(exc),
            )
            self.ts = getattr(self._stream, "ts", None) or self.ts
            self.mode = "update"
            await self._update_placeholder(final=False)

    async def _update_placeholder(self, *, final: bool) -> None:
        """The fallback: post the placeholder once, then chat.update it (throttled)."""
        shown = self._text[: limits.MAX_MARKDOWN_CHARS] or slack_text(self.language, "placeholder")
        if self.ts is None:
            response = await self.client.chat_postMessage(
                channel=self.channel,
                thread_ts=self.thread_ts,
                text=mrkdwn(shown)[: limits.MAX_SECTION_TEXT],
                blocks=[markdown_block(shown)],
            )
            self.ts = str(response["ts"])
            self._last_update = time.monotonic()
            return
        if final or time.monotonic() - self._last_update < self.update_interval_s:
            return
        self._last_update = time.monotonic()
        try:
            await self.client.chat_update(
                channel=self.channel,
                ts=self.ts,
                text=mrkdwn(shown)[: limits.MAX_SECTION_TEXT],
                blocks=[markdown_block(shown)],
            )
        except SlackApiError as exc:
            log.warning(
                "chat.update of %s failed: %s (request id %s)", self.ts, slack_error(exc), request_id(exc)
            )

    async def finish(self, payload: dict[str, Any]) -> str:
        """Replace what was written with the final message ({"text", "blocks"}); returns its ts."""
        if self.mode == "stream" and self._stream is not None:
            try:
                await self._stream.stop()
                self.ts = self._stream.ts or self.ts
            except SlackApiError as exc:  # the stream timed out: chat.update on its ts finishes it
                log.warning(
                    "chat.stopStream failed: %s (request id %s); finishing with chat.update",
                    slack_error(exc),
                    request_id(exc),
                )
                self.ts = self._stream.ts or self.ts
        if self.ts is None:  # nothing streamed yet (a short answer): post the final message as the reply
            response = await self.client.chat_postMessage(
                channel=self.channel, thread_ts=self.thread_ts, **payload
            )
            self.ts = str(response["ts"])
            return self.ts
        try:
            await self.client.chat_update(channel=self.channel, ts=self.ts, **payload)
        except SlackApiError as exc:
            log.warning(
                "chat.update with the final answer failed: %s (request id %s); posting it",
                slack_error(exc),
                request_id(exc),
            )
            response = await self.client.chat_postMessage(
                channel=self.channel, thread_ts=self.thread_ts, **payload
            )
            self.ts = str(response["ts"])
        return self.ts


def action_place(body: dict[str, Any]) -> tuple[str, str]:
    """(channel id, thread ts) of the message a button was clicked under: its thread, or the message itself."""
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = str((body.get("channel") or {}).get("id") or container.get("channel_id"))
    thread_ts = str(
        container.get("thread_ts")
        or message.get("thread_ts")
        or container.get("message_ts")
        or message.get("ts")
    )
    return channel, thread_ts
