"""An HTTP transport that reads the dialects of OpenAI-compatible servers as OpenAI's own wire format.

It sits under the openai SDK's HTTP client (an httpx2 transport, the SDK's documented `http_client`
hook) for one request to the language model, and:

- retries once: after a 429 when its `Retry-After` fits the deadline, after a 5xx at once; never
  past the deadline (`VRAMWISE_LLM_TIMEOUT_S` is the whole request's budget, not a per-read one);
- gives each `chat.completion(.chunk)` the shape langchain-openai reads:
  tool-call `arguments` sent as a JSON object (Ollama) become a JSON string; tool-call chunks
  that carry `index` only in their first chunk (some vLLM/TGI builds) get it on every chunk;
  `<think>` blocks in the text are dropped and Hermes/Qwen `<tool_call>{...}</tool_call>` text
  becomes a tool call (service/agent/llm/tags.py). DeepSeek's `reasoning_content` is a field
  langchain-openai does not read, so it is never shown.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from service.agent.llm.tags import Filtered, TagFilter

_MAX_RETRY_AFTER_S = 30.0  # a longer wait is no retry worth making inside one question


class DeadlineExceeded(httpx2.TimeoutException):
    """The request's overall deadline passed (the openai SDK reports it as a timeout)."""


class _Choice:
    """Per-choice state of a streamed reply: the tag filter and the tool calls seen so far."""

    def __init__(self) -> None:
        self.tags = TagFilter()
        self.last_index = 0
        self.indices: set[int] = set()

    def text_calls(self, filtered: Filtered) -> list[dict[str, Any]]:
        calls = []
        for call in filtered.tool_calls:
            index = max(self.indices, default=-1) + 1
            self.indices.add(index)
            calls.append({"index": index, "id": f"call_text_{index}", "type": "function", "function": call})
        return calls


def _arguments_as_text(call: dict[str, Any]) -> None:
    function = call.get("function")
    if isinstance(function, dict) and isinstance(function.get("arguments"), dict | list):
        function["arguments"] = json.dumps(function["arguments"], ensure_ascii=False)


def normalise_chunk(chunk: dict[str, Any], states: dict[int, _Choice]) -> dict[str, Any]:
    """One `chat.completion.chunk` in OpenAI's shape (see the module docstring)."""
    for choice in chunk.get("choices") or []:
        state = states.setdefault(choice.get("index", 0), _Choice())
        delta = choice.get("delta") or {}
        calls = delta.get("tool_calls") or []
        for call in calls:
            if call.get("index") is None:
                call["index"] = state.last_index
            state.last_index = call["index"]
            state.indices.add(call["index"])
            _arguments_as_text(call)
        if isinstance(delta.get("content"), str):
            filtered = state.tags.feed(delta["content"])
            if choice.get("finish_reason") is not None:
                rest = state.tags.flush()
                filtered = Filtered(filtered.text + rest.text, filtered.tool_calls + rest.tool_calls)
            delta["content"] = filtered.text
            if filtered.tool_calls:
                delta["tool_calls"] = calls + state.text_calls(filtered)
    return chunk


def normalise_completion(body: dict[str, Any]) -> dict[str, Any]:
    """A whole `chat.completion` in OpenAI's shape."""
    for choice in body.get("choices") or []:
        message = choice.get("message") or {}
        for call in message.get("tool_calls") or []:
            _arguments_as_text(call)
        if isinstance(message.get("content"), str):
            tags = TagFilter()
            first, rest = tags.feed(message["content"]), tags.flush()
            message["content"] = first.text + rest.text
            state = _Choice()
            found = state.text_calls(Filtered("", first.tool_calls + rest.tool_calls))
            if found:
                message["tool_calls"] = (message.get("tool_calls") or []) + found
    return body


class _NormalisedStream(httpx2.AsyncByteStream):
    """Rewrites an SSE body line by line; stops at the deadline."""

    def __init__(self, inner: httpx2.AsyncByteStream, deadline: float) -> None:
        self._inner = inner
        self._deadline = deadline

    async def __aiter__(self) -> AsyncIterator[bytes]:
        states: dict[int, _Choice] = {}
        buffer = b""
        async for raw in self._inner:
            if time.monotonic() > self._deadline:
                raise DeadlineExceeded("the language model's overall deadline passed mid-stream")
            buffer += raw
            *lines, buffer = buffer.split(b"\n")
            out = [self._line(line, states) for line in lines]
            if out:
                yield b"\n".join(out) + b"\n"
        if buffer:
            yield self._line(buffer, states)

    @staticmethod
    def _line(line: bytes, states: dict[int, _Choice]) -> bytes:
        if not line.startswith(b"data:") or line.strip() == b"data: [DONE]":
            return line
        try:
            chunk = json.loads(line[5:])
        except ValueError:
            return line
        if not isinstance(chunk, dict):
            return line
        return b"data: " + json.dumps(normalise_chunk(chunk, states), ensure_ascii=False).encode()

    async def aclose(self) -> None:
        await self._inner.aclose()


class NormalisingTransport(httpx2.AsyncBaseTransport):
    """The transport for one request to the language model (see the module docstring)."""

    def __init__(self, timeout_s: float, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._inner = inner or httpx2.AsyncHTTPTransport()
        self._deadline = time.monotonic() + timeout_s

    def _remaining(self) -> float:
        return self._deadline - time.monotonic()

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        remaining = self._remaining()
        if remaining <= 0:
            raise DeadlineExceeded("the language model's overall deadline passed", request=request)
        timeouts = dict(request.extensions.get("timeout") or {})
        request.extensions["timeout"] = {
            key: min(value, remaining) if value is not None else remaining
            for key, value in {**dict.fromkeys(("connect", "read", "write", "pool")), **timeouts}.items()
        }
        return await self._inner.handle_async_request(request)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["accept-encoding"] = "identity"  # the body is rewritten as it arrives
        response = await self._send(request)
        wait = _retry_wait(response)
        if wait is not None and wait < self._remaining():
            await response.aclose()
            await asyncio.sleep(wait)
            response = await self._send(request)
        if response.status_code != 200 or not request.url.path.endswith("/chat/completions"):
            return response
        headers = [(k, v) for k, v in response.headers.items() if k.lower() != "content-length"]
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            stream = _NormalisedStream(response.stream, self._deadline)  # type: ignore[arg-type]
            return httpx2.Response(200, headers=headers, stream=stream, extensions=response.extensions)
        body = await response.aread()
        try:
            parsed = json.loads(body)
        except ValueError:
            return httpx2.Response(200, headers=headers, content=body, extensions=response.extensions)
        content = json.dumps(normalise_completion(parsed), ensure_ascii=False).encode()
        return httpx2.Response(200, headers=headers, content=content, extensions=response.extensions)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _retry_wait(response: httpx2.Response) -> float | None:
    """Seconds to wait before the one retry, or None for no retry."""
    if response.status_code >= 500:
        return 0.0
    if response.status_code != 429:
        return None
    try:
        wait = float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return wait if 0 <= wait <= _MAX_RETRY_AFTER_S else None
