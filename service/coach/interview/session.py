"""The interviewer, channel-neutral: start an interview, grade an answer and ask what comes next (a
follow-up on the same point, a deeper question, the next point, or the scorecard), show an interview.
The HTTP API (service/api/interview.py), the CLI (`vramwise interview`) and Slack are thin adapters.

Answers are graded by the coach's grader (service/coach/grading.py `grade`) against the estimator's
figure for the question's stated scenario; an explanation is graded on the rubric of key points in
prompts/<lang>/coach/concepts.toml, each follow-up adding to what the candidate said before.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from service.coach.answers import parse_answer
from service.coach.coach import MAX_ANSWER_CHARS, CoachError, check_language
from service.coach.expected import estimate_for, expected_value
from service.coach.grading import Grade, concept_points, grade
from service.coach.interview.arc import (
    DEFAULT_LEVEL,
    LEVELS,
    MAX_FOLLOW_UPS,
    Setting,
    next_point,
    pick_setting,
    point_spec,
)
from service.coach.interview.models import (
    InterviewAnswer,
    InterviewGrade,
    InterviewQuestion,
    InterviewRecord,
    InterviewStart,
    InterviewTurn,
    Scorecard,
)
from service.coach.interview.probe import probe
from service.coach.interview.reading import answer_text
from service.coach.interview.scorecard import build_scorecard, markdown, tool_formula
from service.coach.interview.store import InterviewStore
from service.coach.interview.text import figure_text, point_title, question_text, say
from service.coach.text import hint_text, strings
from service.coach.topics import TOPICS, QuestionSpec
from tools.catalog.gpus import find_gpu
from tools.catalog.models import find_model

if TYPE_CHECKING:  # the judge needs langchain: imported by the app only when an LLM is configured
    from service.coach.interview.judge import ConceptJudge


def check_level(level: int | None) -> int:
    if level is None:
        return DEFAULT_LEVEL
    if level not in LEVELS:
        raise CoachError(400, f"level {level} is out of range", field="level", accepted="1, 2, 3")
    return level


def _question(turn: dict[str, Any], position: int) -> InterviewQuestion:
    return InterviewQuestion(
        step=position + 1,
        text=turn["text"],
        topic=turn["point"],
        title=point_title(turn["point"], turn["language"]),
        scenario=turn["spec"]["scenario"] or None,
        quantity=turn["quantity"],
        follow_up=bool(turn["follow_up"]),
    )


def _prepare_point(point: str, setting: Setting, level: int, language: str) -> dict[str, Any]:
    """A point's own question: text, spec and expected figure (the estimator's, never shown before)."""
    spec = point_spec(point, setting, level)
    if spec.quantity == "concept":
        points = list(concept_points(spec.facts["concept"], language))
        return _turn(spec, question_text(spec, None, language), {"key_points": points}, 0, language)
    est = estimate_for(spec.scenario, spec.quantity)
    text = question_text(spec, est, language)
    return _turn(spec, text, expected_value(est, spec.quantity), 0, language)


def _turn(
    spec: QuestionSpec, text: str, expected: dict[str, Any], follow_up: int, language: str
) -> dict[str, Any]:
    return {
        "id": uuid.uuid4().hex,
        "point": spec.topic,
        "follow_up": follow_up,
        "language": language,
        "text": text,
        "quantity": spec.quantity,
        "spec": asdict(spec),
        "expected": expected,
    }


def _prepare_follow_up(turn: dict[str, Any], g: Grade, nth: int, language: str) -> dict[str, Any]:
    """The `nth` follow-up on the point of `turn`, probing the difference of the wrong answer `g`."""
    spec = QuestionSpec(**turn["spec"])
    if spec.quantity == "concept":
        labels = concept_points(spec.facts["concept"], language)
        hit = [labels[p][0] for p in (g.given or {}).get("key_points", [])]
        missing = max(1, _required(spec, language) - len(hit))
        p = probe(spec, None, turn["expected"], g.given or {}, nth, language, (hit, missing))
        follow = QuestionSpec(spec.topic, spec.difficulty, p.ask, {}, "concept", "concept", facts=spec.facts)
        text = say(language, "follow_up", p.ask, **p.values) + _answer_in(follow, language)
        return _turn(follow, text, turn["expected"], nth, language)
    est = estimate_for(spec.scenario, spec.quantity)
    p = probe(spec, est, turn["expected"], g.given or {}, nth, language)
    follow = QuestionSpec(spec.topic, spec.difficulty, p.ask, spec.scenario, p.quantity, p.answer_in)
    target = est if p.quantity == spec.quantity else estimate_for(spec.scenario, p.quantity)
    text = say(language, "follow_up", p.ask, **p.values) + _answer_in(follow, language)
    return _turn(follow, text, expected_value(target, p.quantity), nth, language)


def _required(spec: QuestionSpec, language: str) -> int:
    table = strings(language, "concepts")[spec.facts["concept"]]
    return int(table["required"][min(spec.difficulty, 3) - 1])


def _answer_in(spec: QuestionSpec, language: str) -> str:
    return ("" if language == "zh" else " ") + say(language, "answer_in", spec.answer_in)


def _grade_turn(turn: dict[str, Any], earlier: list[str], answer: str, language: str) -> Grade:
    spec = QuestionSpec(**turn["spec"])
    if spec.quantity == "concept":  # a follow-up adds to what was said on the point before
        parsed = parse_answer("\n".join([*earlier, answer]))
        return grade(spec, None, turn["expected"], parsed, language)
    read = answer_text(answer, spec.answer_in)  # "112 GB: 16 bytes a parameter" is 112 GB
    parsed = parse_answer(read, default_unit="m" if spec.answer_in == "small_bytes" else "g")
    est = estimate_for(spec.scenario, spec.quantity)
    return grade(spec, est, turn["expected"], parsed, language)


def _hint_topic(point: str) -> str:
    """The coach topic whose hint fits an interview point."""
    aliases = {"quantization": "weights_precision", "gradient_checkpointing": "activations", "zero3": "zero"}
    topic = aliases.get(point, point)
    return topic if topic in TOPICS else "seed"


class Interviewer:
    """Channel-neutral interviews over an InterviewStore (opened by the caller)."""

    def __init__(self, store: InterviewStore, judge: ConceptJudge | None = None) -> None:
        self.store = store
        self.judge = judge  # with an LLM configured: a second reader of explanations, never of figures

    async def _row(self, interview_id: str, owner: str | None) -> dict[str, Any]:
        row = await self.store.get(interview_id)
        if row is None or row["owner"] != owner:  # another key's interview is not there for this one
            raise CoachError(
                404,
                f"no interview {interview_id!r}",
                field="interview_id",
                accepted="an interview_id returned by POST /v1/coach/interviews (with the same API key)",
            )
        return row

    async def start(self, language: str | None, level: int | None, owner: str | None) -> InterviewStart:
        lang = check_language(language)
        level = check_level(level)
        interview_id = uuid.uuid4().hex
        setting = pick_setting(interview_id)
        await self.store.create(
            interview_id, owner=owner, language=lang, level=level, setting=asdict(setting)
        )
        point = next_point([], False, level)  # the arc's first topic
        assert point is not None
        first = await asyncio.to_thread(_prepare_point, point, setting, level, lang)
        position = await self.store.add_turn(interview_id, **first)
        question = _question(first, position)
        return InterviewStart(
            interview_id=interview_id,
            language=lang,  # type: ignore[arg-type]
            level=level,
            model=find_model(setting.model).name,
            gpu=find_gpu(setting.gpu)[0].name,
            step=question.step,
            question=question,
        )

    async def answer(self, interview_id: str, answer: str, owner: str | None) -> InterviewAnswer:
        row = await self._row(interview_id, owner)
        if row["scorecard"] is not None:
            raise CoachError(
                409,
                f"interview {interview_id!r} is finished",
                field="interview_id",
                accepted="GET /v1/coach/interviews/{interview_id} for its scorecard; POST a new one",
            )
        if len(answer) > MAX_ANSWER_CHARS:
            raise CoachError(400, f"the answer is longer than {MAX_ANSWER_CHARS} characters", field="answer")
        if not answer.strip():
            raise CoachError(400, "the answer is empty", field="answer", accepted="free text")
        lang = row["language"]
        turns = row["turns"]
        turn = turns[-1]
        position = len(turns) - 1
        if parse_answer(answer).hint:
            hint = say(lang, "feedback", "hint", hint=hint_text(_hint_topic(turn["point"]), lang))
            return InterviewAnswer(
                grade=_no_grade(), feedback=hint, next=_question(turn, position), scorecard=None
            )
        earlier = [t["answer"] for t in turns if t["point"] == turn["point"] and t["answer"]]
        g = await asyncio.to_thread(_grade_turn, turn, earlier, answer, lang)
        if g.correct is False and turn["quantity"] == "concept" and self.judge is not None:
            g = await self._second_reading(turn, g, "\n".join([*earlier, answer]), lang)
        if g.correct is None:
            return InterviewAnswer(
                grade=_no_grade(), feedback=g.explanation, next=_question(turn, position), scorecard=None
            )
        closes = bool(g.correct) or int(turn["follow_up"]) >= MAX_FOLLOW_UPS
        feedback = _feedback(turn, g, lang, closes)
        if closes:  # the tool's figure for the topic's own question, with its formula (stored with it)
            feedback = "\n".join([feedback, await asyncio.to_thread(_closing, turns, lang)])
        stored = await self.store.record_answer(
            turn["id"],
            answer=answer,
            given=g.given,
            correct=g.correct,
            error_pct=g.error_pct,
            feedback=feedback,
        )
        if not stored:
            raise CoachError(409, "this question was already answered", field="answer")
        turn = {**turn, "answer": answer, "given": g.given, "correct": g.correct}
        turns = [*turns[:-1], turn]
        return await self._after(row, turns, g, feedback)

    async def _second_reading(self, turn: dict[str, Any], g: Grade, text: str, language: str) -> Grade:
        """The key points the judge finds beside the rubric's; right when they reach the required count."""
        assert self.judge is not None
        spec = QuestionSpec(**turn["spec"])
        found = await self.judge.points(spec.facts["concept"], text, language)
        rubric = (g.given or {}).get("key_points", [])
        hit = [p for p in turn["expected"]["key_points"] if p in rubric or p in found]
        if len(hit) == len(rubric):
            return g
        judged = [p for p in hit if p not in rubric]
        given = {"key_points": hit, "judged": judged}
        return Grade(len(hit) >= _required(spec, language), g.expected, given, None, g.explanation)

    async def _after(
        self, row: dict[str, Any], turns: list[dict[str, Any]], g: Grade, feedback: str
    ) -> InterviewAnswer:
        """What follows a graded answer: a follow-up, the next point, or the scorecard."""
        lang, level, turn = row["language"], int(row["level"]), turns[-1]
        graded = InterviewGrade(correct=g.correct, expected=g.expected, given=g.given, error_pct=g.error_pct)
        nth = int(turn["follow_up"]) + 1
        if not g.correct and nth <= MAX_FOLLOW_UPS:  # the point stays open: its figure is not told yet
            follow = await asyncio.to_thread(_prepare_follow_up, turn, g, nth, lang)
            position = await self.store.add_turn(row["id"], **follow)
            open_grade = InterviewGrade(correct=False, expected=None, given=g.given, error_pct=None)
            return InterviewAnswer(
                grade=open_grade, feedback=feedback, next=_question(follow, position), scorecard=None
            )
        asked = list(dict.fromkeys(t["point"] for t in turns))
        first_right = bool(turn["correct"]) and int(turn["follow_up"]) == 0
        point = next_point(asked, first_right, level)
        if point is not None:
            setting = Setting(**row["setting"])
            nxt = await asyncio.to_thread(_prepare_point, point, setting, level, lang)
            position = await self.store.add_turn(row["id"], **nxt)
            return InterviewAnswer(
                grade=graded, feedback=feedback, next=_question(nxt, position), scorecard=None
            )
        card = await asyncio.to_thread(build_scorecard, turns, lang)
        await self.store.finish(row["id"], card.model_dump(mode="json"))
        feedback = "\n".join([feedback, say(lang, "feedback", "finished")])
        return InterviewAnswer(grade=graded, feedback=feedback, next=None, scorecard=card)

    async def record(self, interview_id: str, owner: str | None) -> InterviewRecord:
        row = await self._row(interview_id, owner)
        setting = Setting(**row["setting"])
        return InterviewRecord(
            interview_id=row["id"],
            language=row["language"],
            level=int(row["level"]),
            model=find_model(setting.model).name,
            gpu=find_gpu(setting.gpu)[0].name,
            finished=row["scorecard"] is not None,
            turns=[_record_turn(t, i, _closed(row, t)) for i, t in enumerate(row["turns"])],
            scorecard=Scorecard.model_validate(row["scorecard"]) if row["scorecard"] else None,
        )

    async def markdown(self, interview_id: str, owner: str | None) -> str:
        record = await self.record(interview_id, owner)
        row = await self._row(interview_id, owner)
        return markdown(record, row["created_at"].strftime("%Y-%m-%d %H:%M UTC"))

    async def open_question(self, interview_id: str) -> InterviewQuestion | None:
        """The interview's open question (chat channels ask it again); None once finished."""
        row = await self.store.get(interview_id)
        if row is None or row["scorecard"] is not None or not row["turns"]:
            return None
        return _question(row["turns"][-1], len(row["turns"]) - 1)


def _no_grade() -> InterviewGrade:
    return InterviewGrade(correct=None, expected=None, given=None, error_pct=None)


def _feedback(turn: dict[str, Any], g: Grade, language: str, closes: bool) -> str:
    """The verdict; the two figures once the point closes (a follow-up asks for the figure again)."""
    verdict = say(language, "feedback", "right" if g.correct else "wrong")
    if not closes:
        return verdict
    sep = "" if language == "zh" else " "
    expected = turn["expected"]
    if "key_points" in expected:
        hit = len((g.given or {}).get("key_points", []))
        spec = QuestionSpec(**turn["spec"])
        line = say(
            language,
            "feedback",
            "concept",
            hit=hit,
            total=len(expected["key_points"]),
            required=_required(spec, language),
        )
        return f"{verdict}{sep}{line}"
    given = figure_text(g.given or {}, language)
    line = say(language, "feedback", "figures", expected=figure_text(expected, language), given=given)
    return f"{verdict}{sep}{line}"


def _closing(turns: list[dict[str, Any]], language: str) -> str:
    """When a point closes: the tool's figure for the point's own question, with its formula."""
    main = next(t for t in turns if t["point"] == turns[-1]["point"] and not t["follow_up"])
    if main["quantity"] == "concept":
        return say(language, "feedback", "closed_concept", points=tool_formula(main, language))
    figure = figure_text(main["expected"], language)
    return say(language, "feedback", "closed", figure=figure, formula=tool_formula(main, language))


def _closed(row: dict[str, Any], turn: dict[str, Any]) -> bool:
    """Whether the point of `turn` is closed (a later point was asked, or the interview is finished)."""
    return row["scorecard"] is not None or row["turns"][-1]["point"] != turn["point"]


def _record_turn(t: dict[str, Any], position: int, closed: bool) -> InterviewTurn:
    graded = t["correct"] is not None and closed
    return InterviewTurn(
        step=position + 1,
        topic=t["point"],
        title=point_title(t["point"], t["language"]),
        follow_up=int(t["follow_up"]),
        text=t["text"],
        scenario=t["spec"]["scenario"] or None,
        quantity=t["quantity"],
        expected=t["expected"] if graded else None,
        answer=t["answer"],
        given=t["given"],
        correct=t["correct"],
        error_pct=t["error_pct"] if closed else None,
        feedback=t["feedback"],
    )
