"""A fake Slack Web API on 127.0.0.1 (a real HTTP server on port 0, in a thread) that records every call.

Serves `POST /api/<method>` for the methods the Slack channel uses (auth.test, chat.postMessage,
chat.update, chat.startStream / appendStream / stopStream, assistant.threads.*) with Slack's
response shapes (`{"ok": true, ...}`), and `POST /response/<id>`: a response_url sink. Bodies are
parsed as Slack clients send them (JSON or form-encoded). Scripted replies make a method fail:
`script("chat.startStream", {"ok": False, "error": "not_allowed"})`, or answer 429 with a
`Retry-After` header (`script("chat.postMessage", rate_limited(1))`), once per scripted reply.
Imitates bolt-python's tests/mock_web_api_server (its own code, not a copy).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

BOT_USER_ID = "UBOTVRAM"
TEAM_ID = "T0VRAM"


@dataclass
class Call:
    method: str  # "chat.postMessage", or "response_url" for the sink
    body: dict[str, Any]
    headers: dict[str, str]
    at: float  # time.monotonic() when it arrived
    path: str = ""
    status: int = 200


@dataclass
class Scripted:
    status: int = 200
    body: dict[str, Any] = field(default_factory=lambda: {"ok": True})
    headers: dict[str, str] = field(default_factory=dict)


def rate_limited(retry_after_s: int) -> Scripted:
    return Scripted(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after_s)})


def refused(error: str) -> Scripted:
    return Scripted(200, {"ok": False, "error": error})


class FakeSlack:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._scripts: dict[str, list[Scripted]] = {}
        self._ts = itertools.count(1)
        self.server: ThreadingHTTPServer | None = None

    # ---- set-up -----------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    def response_url(self, name: str) -> str:
        return f"{self.base_url}/response/{name}"

    def script(self, method: str, *replies: Scripted | dict[str, Any]) -> None:
        with self._lock:
            queue = self._scripts.setdefault(method, [])
            for r in replies:
                queue.append(r if isinstance(r, Scripted) else Scripted(200, r))

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self._scripts.clear()

    # ---- reading what was called ------------------------------------------------------------------
    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def methods(self) -> list[str]:
        with self._lock:
            return [c.method for c in self.calls]

    def wait_for(self, predicate: Callable[[FakeSlack], Any], timeout: float = 30.0) -> Any:
        """Poll until `predicate(self)` is truthy; returns its value (AssertionError on timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            got = predicate(self)
            if got:
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting; calls so far: {self.methods()}")
            time.sleep(0.02)

    # ---- serving ----------------------------------------------------------------------------------
    def _reply(self, method: str, body: dict[str, Any]) -> Scripted:
        with self._lock:
            queue = self._scripts.get(method)
            if queue:
                return queue.pop(0)
        ts = f"{1_700_000_000 + next(self._ts)}.000100"
        if method == "auth.test":
            return Scripted(
                body={"ok": True, "user_id": BOT_USER_ID, "bot_id": "BVRAM", "team_id": TEAM_ID, "team": "t"}
            )
        if method in ("chat.postMessage", "chat.startStream"):
            return Scripted(body={"ok": True, "channel": body.get("channel"), "ts": ts})
        if method in ("chat.update", "chat.appendStream", "chat.stopStream"):
            return Scripted(body={"ok": True, "channel": body.get("channel"), "ts": body.get("ts")})
        return Scripted(body={"ok": True})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8") if length else ""
                body = _parse(raw, self.headers.get("Content-Type") or "")
                if self.path.startswith("/response/"):
                    method = "response_url"
                elif self.path.startswith("/api/"):
                    method = self.path[len("/api/") :].split("?")[0]
                else:
                    self.send_error(404)
                    return
                reply = fake._reply(method, body)
                with fake._lock:
                    fake.calls.append(
                        Call(
                            method=method,
                            body=body,
                            headers={k: v for k, v in self.headers.items()},
                            at=time.monotonic(),
                            path=self.path,
                            status=reply.status,
                        )
                    )
                payload = (
                    b"ok"
                    if method == "response_url" and reply.status == 200
                    else json.dumps(reply.body).encode()
                )
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/plain" if payload == b"ok" else "application/json")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler

    @contextmanager
    def running(self) -> Iterator[FakeSlack]:
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        self.server = server
        thread = threading.Thread(target=server.serve_forever, name="fake-slack", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


def _parse(raw: str, content_type: str) -> dict[str, Any]:
    if not raw:
        return {}
    if "json" in content_type:
        return json.loads(raw)
    form = {k: v[0] if len(v) == 1 else v for k, v in parse_qs(raw).items()}
    for key in ("blocks", "chunks", "payload", "attachments"):  # JSON-valued form fields
        value = form.get(key)
        if isinstance(value, str) and value[:1] in "[{":
            form[key] = json.loads(value)
    return form
