"""Issue 30, item 8, on a real `vramwise serve`: GET /v1/conversations/{id} returns a page of turns (limit
and cursor; it returned every turn, 16 MB at 2,001 turns), and a conversation holds at most
VRAMWISE_MAX_TURNS questions, one more refused with a clear 409."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.serve_support import serve, serve_env
from tests.service_support import parse_sse

QUESTIONS = [
    "Can I run Llama-2-7B inference on one RTX 4090?",
    "What about an A100 80GB?",
    "And with batch size 8?",
    "With 4-bit weights?",
    "And on two of them?",
]


def _ask(client: httpx.Client, message: str, conversation_id: str | None) -> httpx.Response:
    body = {"message": message} | ({"conversation_id": conversation_id} if conversation_id else {})
    return client.post("/v1/chat", json=body)


def test_history_is_paged_and_a_conversation_is_capped(tmp_path: Path) -> None:
    env = serve_env(tmp_path / "db.sqlite3", VRAMWISE_MAX_TURNS="5")
    with serve(env, tmp_path / "server.log") as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        cid = None
        for question in QUESTIONS:
            r = _ask(client, question, cid)
            assert r.status_code == 200, r.text
            cid = cid or parse_sse(iter(r.text.splitlines()))[0].data["conversation_id"]
        full = _ask(client, "And on an H100?", cid)
        pages, cursor = [], None
        while True:
            params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
            page = client.get(f"/v1/conversations/{cid}", params=params)
            assert page.status_code == 200, page.text
            pages.append(page.json())
            cursor = page.json()["next_cursor"]
            if cursor is None:
                break
        bad_cursor = client.get(f"/v1/conversations/{cid}", params={"cursor": "abc"})
        too_many = client.get(f"/v1/conversations/{cid}", params={"limit": 100_000})
        new = _ask(client, "And on an H100?", None)
    assert full.status_code == 409
    assert full.json()["error"].startswith("this conversation already holds 5 questions")
    assert full.json()["accepted"].startswith("a new conversation: omit conversation_id")
    assert [len(p["turns"]) for p in pages] == [2, 2, 1]
    assert all(p["total_turns"] == 5 for p in pages)
    assert [t["question"] for p in pages for t in p["turns"]] == QUESTIONS  # oldest first, none twice
    assert bad_cursor.status_code == 422 and bad_cursor.json()["field"] == "cursor"
    assert too_many.status_code == 422 and too_many.json()["field"] == "limit"
    assert new.status_code == 200
