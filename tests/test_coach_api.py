"""The coach over HTTP on a real uvicorn: topics, a question, a wrong and a right answer, a hint, the
session with its score by topic, errors that say what is accepted, and a session that survives a
service restart (a new app on the same database). Also the chat-thread adapter a Slack channel calls."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from service.app import create_app
from service.coach.channel import coach_turn
from service.coach.coach import Coach
from service.coach.store import CoachStore
from tests.service_support import live_server, offline_settings, reset_sse_exit_flag
from tools.estimator import estimate
from tools.scenario import Scenario

__all__ = ["reset_sse_exit_flag"]


def _settings(db):  # type: ignore[no-untyped-def]
    return offline_settings(db, agent_processes=0)


def test_topics_in_both_languages(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(_settings(tmp_path / "db.sqlite3"))) as url:
        en = httpx.get(url + "/v1/coach/topics").json()
        zh = httpx.get(url + "/v1/coach/topics", params={"language": "zh"}).json()
    assert [t["id"] for t in en] == [t["id"] for t in zh]
    assert {"seed", "kv_cache", "ppo", "zero", "no_effect", "concepts"} <= {t["id"] for t in en}
    assert dict((t["id"], t["title"]) for t in zh)["moe"].startswith("MoE：")


def test_session_survives_a_restart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "coach.sqlite3"
    with live_server(create_app(_settings(db))) as url:
        q = httpx.post(
            url + "/v1/coach/questions", json={"language": "en", "topic": "kv_cache", "difficulty": 2}
        )
        assert q.status_code == 200, q.text
        q = q.json()
        assert q["quantity"] == "component:kv_cache" and "expected" not in q
        kv = estimate(Scenario(**q["scenario"])).component("kv_cache").bytes
        hint = httpx.post(
            url + "/v1/coach/answers",
            json={"session_id": q["session_id"], "question_id": q["question_id"], "answer": "hint"},
        ).json()
        assert (
            hint["correct"] is None
            and hint["hint"].startswith("Hint: ")
            and f"{kv / 2**30:.2f}" not in hint["hint"]
        )
        wrong = httpx.post(
            url + "/v1/coach/answers",
            json={
                "session_id": q["session_id"],
                "question_id": q["question_id"],
                "answer": f"{kv * 4 / 2**30:.2f} GiB",
            },
        ).json()
        assert wrong["correct"] is False and wrong["expected"] == {"bytes": kv}
        assert wrong["score"] == {"asked": 1, "correct": 0} and wrong["next_difficulty"] == 1
        again = httpx.post(
            url + "/v1/coach/answers",
            json={"session_id": q["session_id"], "question_id": q["question_id"], "answer": "1 GB"},
        )
        assert again.status_code == 409 and "already graded" in again.json()["error"]
    # a new service on the same database: the session, its history and its score are there
    with live_server(create_app(_settings(db))) as url:
        s = httpx.get(url + f"/v1/coach/sessions/{q['session_id']}").json()
        assert s["score"] == {"asked": 1, "correct": 0} and s["by_topic"] == {
            "kv_cache": {"asked": 1, "correct": 0}
        }
        assert s["questions"][0]["hints"] == 1 and s["questions"][0]["expected"] == {"bytes": kv}
        # the missed topic comes back after one other question
        q2 = httpx.post(
            url + "/v1/coach/questions", json={"language": "en", "session_id": q["session_id"]}
        ).json()
        assert q2["topic"] != "kv_cache" and q2["difficulty"] == 1
        q3 = httpx.post(
            url + "/v1/coach/questions", json={"language": "en", "session_id": q["session_id"]}
        ).json()
        assert q3["topic"] == "kv_cache"
        kv3 = estimate(Scenario(**q3["scenario"])).component("kv_cache").bytes
        right = httpx.post(
            url + "/v1/coach/answers",
            json={
                "session_id": q["session_id"],
                "question_id": q3["question_id"],
                "answer": f"about {kv3 / 10**9:.2f} GB",
            },
        ).json()
        assert right["correct"] is True and right["score"] == {"asked": 2, "correct": 1}
        assert right["next_difficulty"] == 2  # raised after a correct answer
        assert [c["bytes"] for c in right["components"]] == [kv3]


def test_errors_say_what_is_accepted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(_settings(tmp_path / "db.sqlite3"))) as url:
        r = httpx.post(url + "/v1/coach/questions", json={"language": "en", "topic": "kv-cach"})
        assert (
            r.status_code == 400
            and r.json()["suggestions"] == ["kv_cache"]
            and "seed" in r.json()["accepted"]
        )
        r = httpx.post(url + "/v1/coach/questions", json={"language": "en", "difficulty": 7})
        assert r.status_code == 400 and r.json()["accepted"] == "1, 2, 3"
        r = httpx.get(url + "/v1/coach/sessions/nope")
        assert r.status_code == 404 and r.json()["field"] == "session_id"
        r = httpx.post(
            url + "/v1/coach/answers", json={"session_id": "nope", "question_id": "x", "answer": "1"}
        )
        assert r.status_code == 404


def test_chat_thread_adapter(tmp_path) -> None:  # type: ignore[no-untyped-def]
    async def run() -> None:
        store = CoachStore(f"sqlite+aiosqlite:///{tmp_path / 'thread.sqlite3'}")
        await store.open()
        coach = Coach(store)
        first = await coach_turn(coach, "slack:C1:1.0", "quiz seed")
        assert "Classic interview figures" in first
        q = await coach.open_question("slack:C1:1.0")
        assert q is not None
        reply = await coach_turn(coach, "slack:C1:1.0", "提示")
        assert reply.startswith("提示：")
        answer = "no" if "fits" in q["expected"] else f"{q['expected']['bytes'] / 10**9:.3f} GB"
        graded = await coach_turn(coach, "slack:C1:1.0", answer)
        assert graded.startswith("✓ Correct.") and "Score: 1/1" in graded
        unknown = await coach_turn(coach, "slack:C2:1.0", "quiz nonsense")
        assert "unknown topic" in unknown and "Accepted:" in unknown
        await store.close()

    asyncio.run(run())


@pytest.mark.parametrize("language", ["en", "zh"])
def test_answer_language_follows_the_person(tmp_path, language: str) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(_settings(tmp_path / "db.sqlite3"))) as url:
        q = httpx.post(
            url + "/v1/coach/questions", json={"language": "en", "topic": "serving", "difficulty": 1}
        ).json()
        answer = "放不下" if language == "zh" else "no"
        a = httpx.post(
            url + "/v1/coach/answers",
            json={"session_id": q["session_id"], "question_id": q["question_id"], "answer": answer},
        ).json()
        assert a["correct"] is not None
        assert ("每卡总计" in a["explanation"]) == (language == "zh")
