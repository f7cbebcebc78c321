"""Shared pieces of the service tests: settings on a temp SQLite file, an SSE reader, a real
uvicorn on 127.0.0.1 in a thread, and the reset of sse-starlette's process-global exit flag."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from sse_starlette.sse import AppStatus

from service.settings import Settings

GIB = 2**30


@pytest.fixture(autouse=True)
def reset_sse_exit_flag() -> Iterator[None]:
    """AppStatus.should_exit is process-global: once set, every later stream ends early."""
    AppStatus.should_exit = False
    yield
    AppStatus.should_exit = False


def offline_settings(db_path: Path, **overrides: Any) -> Settings:
    """Embedded SQLite at `db_path`, offline agent, no LLM even if the environment has a key."""
    base: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{db_path}",
        "agent": "offline",
        "openai_api_key": None,
        "openai_base_url": None,
    }
    base.update(overrides)
    return Settings(**base)


@dataclass
class SSEEvent:
    event: str
    data: Any


def parse_sse(lines: Iterator[str]) -> list[SSEEvent]:
    """Events of a text/event-stream (comments and pings skipped; data parsed as JSON)."""
    events: list[SSEEvent] = []
    name, data = "message", []
    for raw in lines:
        line = raw.rstrip("\r")
        if line == "":
            if data:
                text = "\n".join(data)
                events.append(SSEEvent(name, text if text == "[DONE]" else json.loads(text)))
            name, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
    if data:
        events.append(SSEEvent(name, json.loads("\n".join(data))))
    return events


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def live_server(app: FastAPI) -> Iterator[str]:
    """A real uvicorn serving `app` on 127.0.0.1:<free port>, in a thread; yields the base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        AppStatus.should_exit = False
