"""With an LLM configured, explanations get a second reading (the fake OpenAI endpoint on loopback,
service/coach/interview/judge.py): key points the rubric's patterns miss count when the model names them;
an unknown id, a failing endpoint or an answer with no list change nothing; figures are never sent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from service.agent.llm.endpoint import openai_compatible
from service.coach.interview.judge import ConceptJudge, known_points
from service.coach.interview.session import Interviewer
from service.coach.interview.store import InterviewStore
from service.settings import Settings
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.interview_support import right_answer

PLAIN = "You keep less around and redo some work later, so each step takes longer."


async def _to_the_explanation(db: Path, server: FakeOpenAI, language: str, answer: str):  # type: ignore[no-untyped-def]
    """Answer the three figure questions right (level 1), then `answer` the explanation."""
    settings = Settings(openai_base_url=server.base_url, openai_api_key="test", llm_model="judge")
    store = InterviewStore(f"sqlite+aiosqlite:///{db}")
    await store.open()
    try:
        interviewer = Interviewer(store, judge=ConceptJudge(openai_compatible(settings)))
        started = await interviewer.start(language, 1, None)
        question = started.question
        while question.quantity != "concept":
            turn = (await store.get(started.interview_id))["turns"][-1]
            result = await interviewer.answer(
                started.interview_id, right_answer(turn["expected"], turn["spec"], language), None
            )
            question = result.next
        return await interviewer.answer(started.interview_id, answer, None)
    finally:
        await store.close()


def test_the_judge_adds_the_points_the_rubric_misses(tmp_path: Path) -> None:
    with FakeOpenAI([Reply(content='["activations", "recompute", "bogus"]')]) as server:
        result = asyncio.run(_to_the_explanation(tmp_path / "a.sqlite3", server, "en", PLAIN))
    assert result.grade.correct is True
    assert result.grade.given == {
        "key_points": ["activations", "recompute"],
        "judged": ["activations", "recompute"],
    }
    assert len(server.requests) == 1  # the figures before were graded without it
    sent = json.loads(server.requests[0]["messages"][-1]["content"])
    assert sent["answer"] == PLAIN and set(sent["key_points"]) == {
        "activations",
        "recompute",
        "time",
        "states",
    }
    assert result.next is not None and result.next.topic == "kv_cache"


def test_a_failing_judge_leaves_the_rubric(tmp_path: Path) -> None:
    with FakeOpenAI([Reply(status=500), Reply(status=500)]) as server:
        result = asyncio.run(_to_the_explanation(tmp_path / "b.sqlite3", server, "zh", "不太清楚"))
    assert result.grade.correct is False and result.next is not None and result.next.follow_up


def test_only_known_ids_of_the_first_list() -> None:
    labels = {"activations": "a", "recompute": "r"}
    assert known_points('Sure: ["recompute", "activations", "x"] and ["time"]', labels) == [
        "activations",
        "recompute",
    ]
    assert known_points("none of them", labels) == [] and known_points("[not json]", labels) == []
