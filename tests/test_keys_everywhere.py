"""Issue 30, item 5, on a real `vramwise serve` with VRAMWISE_API_KEYS: coach sessions belong to the key that
made them (another key could read a session, answer its open question and draw its next one), and the web
page is served to a browser without a key (it answered 401) while the API stays closed. Keys that hold no
key refuse to start: tests/test_startup_checks.py."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.serve_support import serve, serve_env

ALICE, BOB = "alice-key-0123456789", "bob-key-9876543210"


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("keys")
    with serve(serve_env(tmp / "db.sqlite3", VRAMWISE_API_KEYS=f"{ALICE},{BOB}"), tmp / "server.log") as (
        url,
        _,
    ):
        yield url


def test_a_coach_session_belongs_to_its_key(keyed: str) -> None:
    with httpx.Client(base_url=keyed, timeout=30) as client:
        asked = client.post("/v1/coach/questions", json={"topic": "weights_precision"}, headers=_auth(ALICE))
        assert asked.status_code == 200, asked.text
        session, question = asked.json()["session_id"], asked.json()["question_id"]
        answer = {"session_id": session, "question_id": question, "answer": "14 GB"}
        bob_reads = client.get(f"/v1/coach/sessions/{session}", headers=_auth(BOB))
        bob_answers = client.post("/v1/coach/answers", json=answer, headers=_auth(BOB))
        bob_draws = client.post("/v1/coach/questions", json={"session_id": session}, headers=_auth(BOB))
        alice_reads = client.get(f"/v1/coach/sessions/{session}", headers=_auth(ALICE))
        alice_answers = client.post("/v1/coach/answers", json=answer, headers=_auth(ALICE))
        alice_draws = client.post("/v1/coach/questions", json={"session_id": session}, headers=_auth(ALICE))
    for refused in (bob_reads, bob_answers, bob_draws):
        assert refused.status_code == 404, refused.text
        assert refused.json()["error"] == f"no coach session {session!r}"  # the same as a session that is not
    assert (
        alice_reads.status_code == 200 and alice_reads.json()["questions"][0]["answer"] is None
    )  # Bob's left none
    assert alice_answers.status_code == 200 and alice_answers.json()["correct"] is not None
    assert alice_draws.status_code == 200 and alice_draws.json()["session_id"] == session


def test_the_page_is_served_and_the_api_stays_closed(keyed: str) -> None:
    with httpx.Client(base_url=keyed, timeout=30) as client:
        page = client.get("/")
        script = client.get("/static/auth.js")
        api = client.get("/v1/gpus")
        conversations = client.get("/v1/conversations/abc")
        with_key = client.get("/v1/gpus", headers=_auth(BOB))
    assert page.status_code == 200 and '<script src="/static/auth.js"></script>' in page.text
    assert (
        script.status_code == 200
        and "sessionStorage" in script.text
        and "localStorage.setItem" not in script.text
    )
    assert api.status_code == 401 and api.headers["www-authenticate"] == "Bearer"
    assert conversations.status_code == 401
    assert with_key.status_code == 200
