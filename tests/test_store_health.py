"""Issue 30, item 4, on a real `vramwise serve`: the store is part of health. Deleting the SQLite file under a
running service went unnoticed (chats "succeeded", /readyz stayed 200, nothing was logged, a restart found
every conversation gone); now the watch logs it within about a second, /readyz answers 503 with the reason,
and writes are refused with 503 saying what to do, while reads of the catalog and estimates still answer.
An immutable (or read-only) file the same, and the service recovers when the file is writable again."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.serve_support import serve, serve_env

LOST = "CONVERSATION STORE LOST"


def _wait_for_log(log: Path, text: str, timeout: float = 10.0) -> float:
    started = time.monotonic()
    while text not in log.read_text():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{text!r} not logged within {timeout} s: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    return time.monotonic() - started


def test_a_deleted_database_file_is_noticed_logged_and_refuses_writes(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    log = tmp_path / "server.log"
    with serve(serve_env(db), log) as (url, _), httpx.Client(base_url=url, timeout=30) as client:
        asked = client.post("/v1/chat", json={"message": "Llama-2-7B inference on one 4090?"})
        assert asked.status_code == 200
        for path in tmp_path.glob("db.sqlite3*"):
            path.unlink()
        detected_s = _wait_for_log(log, LOST)  # the watch, with no request at all
        ready = client.get("/readyz")
        chat = client.post("/v1/chat", json={"message": "And on an A100?"})
        estimate = client.post("/v1/estimate", json={"model": "llama-2-7b", "gpu": "4090"})
        catalog = client.get("/v1/gpus")
    assert detected_s < 2.5, detected_s
    assert ready.status_code == 503 and ready.json()["reason"] == "the SQLite file db.sqlite3 was deleted"
    assert chat.status_code == 503 and chat.headers["retry-after"] == "5"
    assert chat.json()["error"].startswith("the conversation store is unavailable: the SQLite file")
    assert chat.json()["accepted"].startswith("retry once GET /readyz answers 200")
    assert estimate.status_code == 200 and catalog.status_code == 200  # nothing stored: still served
    assert log.read_text().count(LOST) == 1  # loud once, not once a second


def test_an_immutable_database_file_is_unavailable_then_recovers(tmp_path: Path) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    db = tmp_path / "db.sqlite3"
    log = tmp_path / "server.log"
    with serve(serve_env(db), log) as (url, _), httpx.Client(base_url=url, timeout=30) as client:
        if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
            pytest.skip("this user or file system cannot make a file immutable")
        try:
            ready = client.get("/readyz")
            chat = client.post("/v1/chat", json={"message": "Llama-2-7B inference on one 4090?"})
        finally:
            subprocess.run(["chattr", "-i", str(db)], check=True)
        again = client.get("/readyz")
        _wait_for_log(log, "conversation store answers again")
        chat_again = client.post("/v1/chat", json={"message": "Llama-2-7B inference on one 4090?"})
    assert ready.status_code == 503 and "cannot be written" in ready.json()["reason"]
    assert chat.status_code == 503
    assert again.status_code == 200 and chat_again.status_code == 200
    assert "Traceback" not in log.read_text()
