"""The scorecard of a finished interview (per point: what was asked, the answer, the tool's figure with
its formula, the grade; an overall level; two topics to study with their knowledge-base entry) and the
interview as Markdown. Texts: prompts/<lang>/coach/interview.toml [grade], [level], [markdown]."""

from __future__ import annotations

from typing import Any

from service.agent.offline.kb import kb_entry
from service.coach.expected import estimate_for
from service.coach.grading import concept_points
from service.coach.interview.arc import ARC, KB, PARENT
from service.coach.interview.models import InterviewRecord, Scorecard, StudyItem, TopicScore
from service.coach.interview.text import figure_text, formula_text, point_title, say

POINT_VALUE = {"right": 1.0, "partial": 0.5, "wrong": 0.0}
# (least share of the points, level), best first
LEVELS: tuple[tuple[float, str], ...] = ((0.85, "senior"), (0.6, "mid"), (0.3, "junior"), (0.0, "not_ready"))
STUDY_COUNT = 2


def points_of(turns: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The interview's points in the order asked, each with its questions (the point's own first)."""
    points: dict[str, list[dict[str, Any]]] = {}
    for t in turns:
        points.setdefault(t["point"], []).append(t)
    return list(points.items())


def point_grade(point_turns: list[dict[str, Any]]) -> str:
    if point_turns[0]["correct"]:
        return "right"
    return "partial" if any(t["correct"] for t in point_turns[1:]) else "wrong"


def tool_formula(turn: dict[str, Any], language: str) -> str:
    spec = turn["spec"]
    if spec["quantity"] == "concept":
        points = concept_points(spec["facts"]["concept"], language)
        sep = "；" if language == "zh" else "; "
        return sep.join(label for label, _ in points.values())
    return formula_text(estimate_for(spec["scenario"], spec["quantity"]), spec["quantity"], language)


def _topic_score(point: str, point_turns: list[dict[str, Any]], language: str) -> TopicScore:
    main = point_turns[0]
    grade = point_grade(point_turns)
    expected = main["expected"]
    return TopicScore(
        topic=point,
        title=point_title(point, language),
        asked=main["text"],
        answer=main["answer"],
        expected=expected,
        figure=figure_text(expected, language),
        formula=tool_formula(main, language),
        grade=grade,  # type: ignore[arg-type]
        correct=grade == "right",
        questions=len(point_turns),
    )


def _arc_position(point: str) -> int:
    return ARC.index(PARENT.get(point, point))


def study_next(topics: list[TopicScore]) -> list[str]:
    """The two points to study: the wrong ones, then those right only after follow-ups (in the arc's
    order); a clean interview gets its two most advanced points (the arc's last)."""
    rank = {"wrong": 0, "partial": 1, "right": 2}
    ordered = sorted(
        topics, key=lambda t: (rank[t.grade], _arc_position(t.topic) * (1 if t.grade != "right" else -1))
    )
    return [t.topic for t in ordered[:STUDY_COUNT]]


def _study_item(point: str, language: str) -> StudyItem:
    entry = kb_entry(KB[point], language)
    return StudyItem(
        topic=point,
        title=point_title(point, language),
        kb=KB[point],
        kb_title=entry.title if entry else KB[point],
    )


def build_scorecard(turns: list[dict[str, Any]], language: str) -> Scorecard:
    topics = [_topic_score(p, ts, language) for p, ts in points_of(turns)]
    score = sum(POINT_VALUE[t.grade] for t in topics)
    share = score / max(len(topics), 1)
    level = next(name for least, name in LEVELS if share >= least - 1e-9)
    study = study_next(topics)
    return Scorecard(
        topics=topics,
        level=level,
        level_text=say(language, "level", level),
        score=score,
        points=len(topics),
        study_next=study,
        study=[_study_item(p, language) for p in study],
    )


def _cell(text: str | None) -> str:
    return (text or "-").replace("|", "\\|").replace("\n", " ")


def markdown(record: InterviewRecord, created: str) -> str:
    """The interview as Markdown: the scorecard table, what to study, the transcript."""
    lang = record.language
    lines = [
        say(lang, "markdown", "title", model=record.model, gpu=record.gpu),
        "",
        say(
            lang,
            "markdown",
            "meta",
            interview_id=record.interview_id,
            level=record.level,
            lang=lang,
            date=created,
        ),
    ]
    card = record.scorecard
    if card is not None:
        lines += ["", say(lang, "markdown", "scorecard"), ""]
        score = f"{card.score:g}"
        lines += [say(lang, "markdown", "overall", level=card.level_text, score=score, points=card.points)]
        lines += ["", say(lang, "markdown", "table_head"), "|---|---|---|---|---|---|"]
        for t in card.topics:
            cells = [t.title, t.asked, t.answer, t.figure, t.formula, say(lang, "grade", t.grade)]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines += ["", say(lang, "markdown", "study"), ""]
        for item in card.study:
            lines.append(say(lang, "markdown", "study_item", lang=lang, **item.model_dump()))
    lines += ["", say(lang, "markdown", "transcript"), ""]
    for turn in record.turns:
        follow = say(lang, "markdown", "follow") if turn.follow_up else ""
        title = point_title(turn.topic, lang)
        lines.append(
            say(lang, "markdown", "question", step=turn.step, topic=title, follow=follow, text=turn.text)
        )
        if turn.answer is not None:
            lines += ["", say(lang, "markdown", "answer", answer=turn.answer)]
        if turn.feedback:
            lines += ["", turn.feedback]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
