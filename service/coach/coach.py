"""The coach, channel-neutral: topics, the next question of a session, grading an answer, a session's
record. The HTTP API (service/api/coach.py), the CLI (`vramwise quiz`) and chat channels
(service/coach/channel.py) are thin adapters over `Coach`.

Adaptive sessions: a correct answer raises the session's difficulty (up to 3), a wrong one lowers it;
a topic answered wrongly is asked again after one other question, until it is answered right. The
scenario of each question is drawn from a random generator seeded by the session id and the
question's position, so a session is reproducible.
"""

from __future__ import annotations

import asyncio
import difflib
import random
import re
import uuid
from dataclasses import asdict
from typing import Any, Literal

from pydantic import BaseModel, Field

from service.coach.answers import parse_answer
from service.coach.expected import estimate_for, expected_value
from service.coach.grading import Grade, grade
from service.coach.store import CoachStore
from service.coach.text import hint_text, question_text, topic_title
from service.coach.topics import DIFFICULTIES, TOPICS, QuestionSpec, generate
from service.store import visible

Language = Literal["en", "zh"]
_CJK = re.compile(r"[\u4e00-\u9fff]")
MAX_ANSWER_CHARS = 2000


class CoachError(Exception):
    """A request the coach refuses: what was wrong and what is accepted."""

    def __init__(
        self,
        status_code: int,
        message: str,
        *,
        field: str | None = None,
        accepted: str | None = None,
        suggestions: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.field = field
        self.accepted = accepted
        self.suggestions = list(suggestions or [])


class Topic(BaseModel):
    id: str
    title: str


class Score(BaseModel):
    asked: int = 0  # questions graded
    correct: int = 0


class QuestionOut(BaseModel):
    session_id: str
    question_id: str
    language: Language
    topic: str
    difficulty: int
    text: str
    scenario: dict[str, Any] | None
    quantity: str


class AnswerOut(BaseModel):
    correct: bool | None  # None: a hint, or nothing gradable was read (the question stays open)
    expected: dict[str, Any] | None
    given: dict[str, Any] | None
    error_pct: float | None
    explanation: str
    score: Score
    hint: str | None = None
    topic: str
    difficulty: int
    next_difficulty: int
    components: list[dict[str, Any]] = Field(default_factory=list)  # the chart of the breakdown


class SessionQuestion(BaseModel):
    question_id: str
    topic: str
    difficulty: int
    text: str
    quantity: str
    scenario: dict[str, Any] | None
    expected: dict[str, Any] | None  # shown once graded
    answer: str | None
    given: dict[str, Any] | None
    correct: bool | None
    error_pct: float | None
    explanation: str | None
    hints: int


class SessionOut(BaseModel):
    session_id: str
    language: Language
    topic: str | None
    difficulty: int
    score: Score
    by_topic: dict[str, Score]
    questions: list[SessionQuestion]


def answer_language(text: str, default: str) -> str:
    """The person's language: Chinese when the answer has Chinese characters, else the session's."""
    return "zh" if _CJK.search(text) else default


def check_topic(topic: str | None) -> str | None:
    if topic is None or topic == "":
        return None
    key = topic.strip().lower().replace("-", "_").replace(" ", "_")
    if key in TOPICS:
        return key
    raise CoachError(
        400,
        f"unknown topic {topic!r}",
        field="topic",
        accepted=", ".join(TOPICS),
        suggestions=difflib.get_close_matches(key, TOPICS, n=3, cutoff=0.5),
    )


def check_difficulty(difficulty: int | None) -> int | None:
    if difficulty is None:
        return None
    if difficulty not in DIFFICULTIES:
        raise CoachError(
            400, f"difficulty {difficulty} is out of range", field="difficulty", accepted="1, 2, 3"
        )
    return difficulty


def check_language(language: str | None) -> str:
    lang = (language or "en").lower()
    if lang not in ("en", "zh"):
        raise CoachError(400, f"unknown language {language!r}", field="language", accepted="en, zh")
    return lang


def _spec_of(row: dict[str, Any]) -> QuestionSpec:
    return QuestionSpec(**row["spec"])


def _score(rows: list[dict[str, Any]]) -> Score:
    graded = [q for q in rows if q["correct"] is not None]
    return Score(asked=len(graded), correct=sum(1 for q in graded if q["correct"]))


def next_topic(rows: list[dict[str, Any]], rng: random.Random) -> str:
    """A topic answered wrongly (and not right since) comes back after one other question; otherwise
    the least-asked topic, ties broken by `rng`."""
    last: dict[str, tuple[int, bool]] = {}
    for i, q in enumerate(rows):
        if q["correct"] is not None:
            last[q["topic"]] = (i, bool(q["correct"]))
    missed = sorted((i, t) for t, (i, ok) in last.items() if not ok)
    if missed and rows and rows[-1]["topic"] != missed[0][1]:
        return missed[0][1]
    counts = {t: 0 for t in TOPICS}
    for q in rows:
        counts[q["topic"]] += 1
    fewest = min(counts.values())
    choices = [t for t in TOPICS if counts[t] == fewest and (not rows or t != rows[-1]["topic"])]
    return rng.choice(choices or list(TOPICS))


class Coach:
    """Channel-neutral coach over a CoachStore (opened by the caller)."""

    def __init__(self, store: CoachStore) -> None:
        self.store = store

    @staticmethod
    def topics(language: str | None = None) -> list[Topic]:
        lang = check_language(language)
        return [Topic(id=t, title=topic_title(t, lang)) for t in TOPICS]

    async def _session_row(self, session_id: str, owner: str | None = None) -> dict[str, Any]:
        """The session, visible to the API key that made it (`owner`: its digest; None: keys off)."""
        row = await self.store.get_session(session_id)
        if row is None or not visible(row.get("owner"), owner):
            raise CoachError(
                404,
                f"no coach session {session_id!r}",
                field="session_id",
                accepted="a session_id returned by POST /v1/coach/questions",
            )
        return row

    async def ask(
        self,
        language: str | None = None,
        topic: str | None = None,
        difficulty: int | None = None,
        session_id: str | None = None,
        *,
        create: bool = False,
        owner: str | None = None,
    ) -> QuestionOut:
        """The next question of a session (a new session when `session_id` is None, or with `create`
        when it does not exist yet: a chat thread's own key)."""
        topic = check_topic(topic)
        difficulty = check_difficulty(difficulty)
        row = await self.store.get_session(session_id) if session_id else None
        if row is not None and not visible(row.get("owner"), owner):
            await self._session_row(session_id or "", owner)  # another key's session: 404
        if row is None:
            if session_id and not create:
                await self._session_row(session_id)  # raises 404
            lang = check_language(language)
            session_id = session_id or uuid.uuid4().hex
            await self.store.create_session(session_id, lang, topic, difficulty or 1, owner=owner)
            row = await self._session_row(session_id, owner)
        lang = check_language(language or row["language"])
        rows = row["questions"]
        position = len(rows)
        rng = random.Random(f"{session_id}:{position}")
        chosen = topic or next_topic(rows, rng)
        level = difficulty or int(row["difficulty"])
        spec = generate(chosen, level, rng)
        text, expected, spec = await asyncio.to_thread(_prepare, spec, lang)
        question_id = uuid.uuid4().hex
        await self.store.add_question(
            session_id,
            id=question_id,
            topic=spec.topic,
            difficulty=spec.difficulty,
            language=lang,
            text=text,
            quantity=spec.quantity,
            spec=asdict(spec),
            expected=expected,
        )
        return QuestionOut(
            session_id=session_id,
            question_id=question_id,
            language=lang,  # type: ignore[arg-type]
            topic=spec.topic,
            difficulty=spec.difficulty,
            text=text,
            scenario=spec.scenario or None,
            quantity=spec.quantity,
        )

    async def answer(
        self, session_id: str, question_id: str, answer: str, owner: str | None = None
    ) -> AnswerOut:
        row = await self._session_row(session_id, owner)
        q = next((x for x in row["questions"] if x["id"] == question_id), None)
        if q is None:
            raise CoachError(
                404,
                f"no question {question_id!r} in session {session_id!r}",
                field="question_id",
                accepted="a question_id of this session",
            )
        if len(answer) > MAX_ANSWER_CHARS:
            raise CoachError(400, f"the answer is longer than {MAX_ANSWER_CHARS} characters", field="answer")
        spec = _spec_of(q)
        lang = answer_language(answer, q["language"])
        score = _score(row["questions"])
        level = int(row["difficulty"])
        if q["correct"] is not None:
            raise CoachError(
                409,
                f"question {question_id!r} was already graded",
                field="question_id",
                accepted="the open question of the session (POST /v1/coach/questions for the next one)",
            )
        parsed = parse_answer(answer, default_unit="m" if spec.answer_in == "small_bytes" else "g")
        if parsed.hint:
            await self.store.add_hint(question_id)
            hint = hint_text(spec.topic, lang)
            return AnswerOut(
                correct=None,
                expected=None,
                given=None,
                error_pct=None,
                explanation=hint,
                score=score,
                hint=hint,
                topic=spec.topic,
                difficulty=spec.difficulty,
                next_difficulty=level,
            )
        g: Grade = await asyncio.to_thread(_grade, spec, q["expected"], parsed, lang)
        if g.correct is None:
            return AnswerOut(
                correct=None,
                expected=None,
                given=None,
                error_pct=None,
                explanation=g.explanation,
                score=score,
                topic=spec.topic,
                difficulty=spec.difficulty,
                next_difficulty=level,
            )
        new_level = min(3, level + 1) if g.correct else max(1, level - 1)
        stored = await self.store.record_answer(
            session_id,
            question_id,
            answer=answer,
            given=g.given,
            correct=g.correct,
            error_pct=g.error_pct,
            explanation=g.explanation,
            difficulty=new_level,
        )
        if not stored:  # graded by a concurrent request in between
            raise CoachError(409, f"question {question_id!r} was already graded", field="question_id")
        score = Score(asked=score.asked + 1, correct=score.correct + int(g.correct))
        return AnswerOut(
            correct=g.correct,
            expected=g.expected,
            given=g.given,
            error_pct=g.error_pct,
            explanation=g.explanation,
            score=score,
            topic=spec.topic,
            difficulty=spec.difficulty,
            next_difficulty=new_level,
            components=g.components,
        )

    async def session(self, session_id: str, owner: str | None = None) -> SessionOut:
        row = await self._session_row(session_id, owner)
        rows = row["questions"]
        by_topic: dict[str, Score] = {}
        for q in rows:
            if q["correct"] is None:
                continue
            s = by_topic.setdefault(q["topic"], Score())
            s.asked += 1
            s.correct += int(bool(q["correct"]))
        return SessionOut(
            session_id=row["id"],
            language=row["language"],
            topic=row["topic"],
            difficulty=int(row["difficulty"]),
            score=_score(rows),
            by_topic=by_topic,
            questions=[
                SessionQuestion(
                    question_id=q["id"],
                    topic=q["topic"],
                    difficulty=q["difficulty"],
                    text=q["text"],
                    quantity=q["quantity"],
                    scenario=q["spec"].get("scenario") or None,
                    expected=q["expected"] if q["correct"] is not None else None,
                    answer=q["answer"],
                    given=q["given"],
                    correct=q["correct"],
                    error_pct=q["error_pct"],
                    explanation=q["explanation"],
                    hints=q["hints"] or 0,
                )
                for q in rows
            ],
        )

    async def resume(self, session_id: str, owner: str | None = None) -> QuestionOut | None:
        """The session's open (ungraded) last question, to ask again after a restart; None when none."""
        await self._session_row(session_id, owner)  # 404 for an unknown session, or another key's
        q = await self.open_question(session_id)
        if q is None:
            return None
        return QuestionOut(
            session_id=session_id,
            question_id=q["id"],
            language=q["language"],
            topic=q["topic"],
            difficulty=q["difficulty"],
            text=q["text"],
            scenario=q["spec"].get("scenario") or None,
            quantity=q["quantity"],
        )

    async def open_question(self, session_id: str) -> dict[str, Any] | None:
        """The session's last question when it is still ungraded (chat channels answer it)."""
        row = await self.store.get_session(session_id)
        if row is None or not row["questions"]:
            return None
        last = row["questions"][-1]
        return last if last["correct"] is None else None


def _prepare(spec: QuestionSpec, language: str) -> tuple[str, dict[str, Any], QuestionSpec]:
    """Estimate the stated scenario: the expected figure (stored, never shown before grading) and the
    question text (which states the scenario and the estimator's assumptions)."""
    if spec.quantity == "concept":
        from service.coach.grading import concept_points

        points = list(concept_points(spec.facts["concept"], language))
        return question_text(spec, None, language), {"key_points": points}, spec
    if spec.topic == "no_effect":
        base = estimate_for(spec.facts["baseline_scenario"], "per_gpu.total_bytes")
        spec = QuestionSpec(
            **{**asdict(spec), "facts": {**spec.facts, "baseline_bytes": base.per_gpu.total_bytes}}
        )
    est = estimate_for(spec.scenario, spec.quantity)
    return question_text(spec, est, language), expected_value(est, spec.quantity), spec


def _grade(spec: QuestionSpec, expected: dict[str, Any], parsed: Any, language: str) -> Grade:
    est = None if spec.quantity == "concept" else estimate_for(spec.scenario, spec.quantity)
    return grade(spec, est, expected, parsed, language)
