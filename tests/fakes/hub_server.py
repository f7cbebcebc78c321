"""A fake Hugging Face Hub on 127.0.0.1: the `resolve` routes huggingface_hub downloads from.

Serves real config.json files and safetensors headers (8-byte length + JSON header, no weights) with the
headers huggingface_hub reads (X-Repo-Commit, ETag, Content-Length), byte ranges for the headers, and the
Hub's error answers: 401 + X-Error-Code GatedRepo, 404 + RepoNotFound / EntryNotFound. A repo can be
made slow (each request sleeps) to test the time bound.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def safetensors_header(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A safetensors file's header for `name -> (dtype, shape)` (the weights themselves are left out)."""
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4}
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw


@dataclass
class FakeRepo:
    files: dict[str, bytes]
    gated: bool = False
    delay_s: float = 0.0
    commit: str = field(default="")

    def __post_init__(self) -> None:
        if not self.commit:
            self.commit = hashlib.sha1(repr(sorted(self.files)).encode()).hexdigest()


@dataclass
class FakeHub:
    repos: dict[str, FakeRepo] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    url: str = ""


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output clean
            return

        def _error(self, status: int, code: str, message: str) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", message)
            self.send_header("Content-Type", "application/json")
            body = json.dumps({"error": message}).encode()
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _serve(self) -> None:
            hub.requests.append(f"{self.command} {self.path}")
            parts = self.path.split("?", 1)[0].strip("/").split("/")
            if len(parts) < 5 or parts[2] != "resolve":
                self._error(404, "RepoNotFound", "Repository not found")
                return
            repo_id, filename = "/".join(parts[:2]), "/".join(parts[4:])
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(404, "RepoNotFound", "Repository not found")
                return
            if repo.delay_s:
                time.sleep(repo.delay_s)
            if repo.gated and "authorization" not in {k.lower() for k in self.headers}:
                self._error(
                    401, "GatedRepo", f"Access to model {repo_id} is restricted. You must have access to it"
                )
                return
            if filename not in repo.files:
                self._error(404, "EntryNotFound", f"{filename} does not exist on main")
                return
            body = repo.files[filename]
            status, chunk = 200, body
            rng = self.headers.get("Range") or self.headers.get("range")
            if rng and rng.startswith("bytes="):
                start_s, _, end_s = rng[6:].partition("-")
                start, end = int(start_s or 0), min(int(end_s or len(body) - 1), len(body) - 1)
                status, chunk = 206, body[start : end + 1]
            self.send_response(status)
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("ETag", '"' + hashlib.sha256(body).hexdigest() + '"')
            self.send_header("Content-Length", str(len(chunk)))
            self.send_header("Content-Type", "application/octet-stream")
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{start + len(chunk) - 1}/{len(body)}")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(chunk)

        do_GET = _serve
        do_HEAD = _serve

    return Handler


@contextmanager
def fake_hub(repos: dict[str, FakeRepo]) -> Iterator[FakeHub]:
    """A running fake Hub on 127.0.0.1, port 0; `hub.url` is what HF_ENDPOINT is set to."""
    hub = FakeHub(repos=repos)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
