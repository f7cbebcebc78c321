"""`vramwise serve` as a real subprocess on a free loopback port (its own process group), for the tests of
what only the real command does: uvicorn's settings, the start-up checks, the log it writes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.service_support import free_port

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60
SERVE = [sys.executable, "-c", "from service.cli import main; raise SystemExit(main())", "serve"]


def serve_env(db: Path, **settings: str) -> dict[str, str]:
    """The environment without the caller's VRAMWISE_/OPENAI_ settings, offline, SQLite at `db`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VRAMWISE_", "OPENAI_", "DATABASE_URL"))}
    env.update(
        {
            "VRAMWISE_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
            "VRAMWISE_AGENT": "offline",
            "VRAMWISE_AGENT_PROCESSES": "0",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.update(settings)
    return env


@contextlib.contextmanager
def serve(env: dict[str, str], log: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """`vramwise serve` on a free port; yields (base URL, process) once /readyz answers 200."""
    port = free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [*SERVE, "--port", str(port)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"server did not get ready: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield url, proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def refused_start(env: dict[str, str]) -> tuple[int, str]:
    """Run `vramwise serve` expecting it to refuse to start: (exit code, everything it printed)."""
    done = subprocess.run(
        [*SERVE, "--port", str(free_port())], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    return done.returncode, done.stdout + done.stderr
