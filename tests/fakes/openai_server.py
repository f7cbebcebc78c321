"""A fake OpenAI-compatible endpoint: FastAPI served by a real uvicorn on 127.0.0.1.

It speaks the real wire format of `POST /v1/chat/completions`: with `"stream": true`, SSE
`data: {chat.completion.chunk}` lines (a role delta, content deltas a few characters at a time,
tool-call deltas with the arguments split across chunks, a finish_reason chunk) and
`data: [DONE]`; without it, one `chat.completion` object. Each request consumes the next
scripted reply:

- `Reply(content="...")`, `Reply(tool_calls=[("estimate_memory", {...})])` or a raw JSON string
  for malformed arguments;
- `Reply(status=500)` / `Reply(status=429)`: an error response with an OpenAI error body;
- `Reply(delay_s=5)`: sleep before answering (timeouts);
- a callable `(request_json) -> Reply` deciding from what the client sent.

Every request body is kept in `server.requests` for assertions.

    with FakeOpenAI([Reply(tool_calls=[...]), Reply(content="...")]) as server:
        ChatOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse


@dataclass
class Reply:
    content: str = ""
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    status: int = 200
    delay_s: float = 0.0
    chunk_chars: int = 6  # content delta size
    stall_after_s: float = 0.0  # stream the first delta, then stall this long (mid-stream timeout)
    # wire variants of real servers
    finish_reason: str | None = None  # override: "length" for a reply cut off by max_tokens
    end_inside_arguments: bool = False  # the stream stops mid-arguments: no finish chunk, no [DONE]
    object_arguments: bool = False  # Ollama: `arguments` as a JSON object, not a string
    bare_continuation_chunks: bool = False  # index/id/type only in a tool call's first chunk (vLLM)
    reasoning_content: str = ""  # DeepSeek: `reasoning_content` deltas / field before the answer
    empty_choices: bool = False  # a 200 with `choices: []`
    retry_after: str | None = None  # the Retry-After header of an error reply


def _raw_args(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


def _finish(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


async def _stream(reply: Reply, cid: str, model: str) -> AsyncIterator[str]:
    if reply.empty_choices:
        body = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model, "choices": []}
        yield f"data: {json.dumps(body)}\n\n"
        yield "data: [DONE]\n\n"
        return
    yield _chunk(cid, model, {"role": "assistant", "content": ""})
    for i in range(0, len(reply.reasoning_content), reply.chunk_chars):
        yield _chunk(cid, model, {"reasoning_content": reply.reasoning_content[i : i + reply.chunk_chars]})
    text = reply.content
    for i in range(0, len(text), reply.chunk_chars):
        yield _chunk(cid, model, {"content": text[i : i + reply.chunk_chars]})
        if i == 0 and reply.stall_after_s:
            await asyncio.sleep(reply.stall_after_s)
        await asyncio.sleep(0)
    for index, (name, args) in enumerate(reply.tool_calls):
        raw = _raw_args(args)
        head = {
            "index": index,
            "id": f"call_{cid}_{index}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        if reply.object_arguments:  # Ollama: the whole call in one chunk, arguments as an object
            head["function"]["arguments"] = args
            yield _chunk(cid, model, {"tool_calls": [head]})
            continue
        yield _chunk(cid, model, {"tool_calls": [head]})
        for j in range(0, len(raw), 16):
            piece: dict[str, Any] = {"function": {"arguments": raw[j : j + 16]}}
            if not reply.bare_continuation_chunks:
                piece["index"] = index
            yield _chunk(cid, model, {"tool_calls": [piece]})
    if reply.end_inside_arguments:
        return
    yield _chunk(cid, model, {}, finish=_finish(reply))
    yield "data: [DONE]\n\n"


def _completion(reply: Reply, cid: str, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.reasoning_content:
        message["reasoning_content"] = reply.reasoning_content
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{cid}_{i}",
                "type": "function",
                "function": {"name": n, "arguments": a if reply.object_arguments else _raw_args(a)},
            }
            for i, (n, a) in enumerate(reply.tool_calls)
        ]
    if reply.empty_choices:
        return {"id": cid, "object": "chat.completion", "created": 0, "model": model, "choices": []}
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _finish(reply),
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


_ERRORS = {
    429: ("Rate limit reached for requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error"),
    503: ("The engine is currently overloaded.", "server_error"),
}


def build_app(server: FakeOpenAI) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(request: Request) -> Any:
        body = await request.json()
        server.requests.append(body)
        reply = server.next_reply(body)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            message, code = _ERRORS.get(reply.status, ("error", "error"))
            return JSONResponse(
                {"error": {"message": message, "type": code, "param": None, "code": code}},
                status_code=reply.status,
                headers={"retry-after": reply.retry_after} if reply.retry_after is not None else None,
            )
        cid = f"chatcmpl-{len(server.requests)}"
        model = body.get("model", "fake")
        if body.get("stream"):
            return StreamingResponse(_stream(reply, cid, model), media_type="text/event-stream")
        return _completion(reply, cid, model)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "tests"}]}

    return app


class FakeOpenAI:
    """Runs the fake endpoint on 127.0.0.1 (an ephemeral port) in a background thread."""

    def __init__(self, script: list[Reply | Callable[[dict[str, Any]], Reply]] | None = None) -> None:
        self.script: list[Reply | Callable[[dict[str, Any]], Reply]] = list(script or [])
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if not self.script:
                return Reply(status=500)
            step = self.script.pop(0)
        return step(body) if callable(step) else step

    def start(self) -> FakeOpenAI:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(build_app(self), log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake OpenAI server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def refused_base_url() -> str:
    """A 127.0.0.1 URL where nothing listens (connection refused)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"
