"""The interview's shapes at the edges (the contract's "Mock interview" bodies, plus additive fields)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Language = Literal["en", "zh"]
PointGrade = Literal["right", "partial", "wrong"]


class InterviewQuestion(BaseModel):
    step: int  # 1-based position of the question in the interview
    text: str
    topic: str  # the arc's point
    title: str  # the point's title in the interview's language
    scenario: dict[str, Any] | None  # what the tool estimates (None for an explanation)
    quantity: str  # as in the coach's questions (service/coach/expected.py)
    follow_up: bool


class InterviewStart(BaseModel):
    interview_id: str
    language: Language
    level: int
    model: str
    gpu: str
    step: int
    question: InterviewQuestion


class InterviewGrade(BaseModel):
    correct: bool | None  # None: nothing gradable was read (the question stays open)
    expected: dict[str, Any] | None
    given: dict[str, Any] | None
    error_pct: float | None


class TopicScore(BaseModel):
    topic: str
    title: str
    asked: str  # the point's question
    answer: str | None  # the candidate's answer to it
    expected: dict[str, Any]
    figure: str  # the tool's figure as a person reads it
    formula: str  # how the tool gets it
    grade: PointGrade
    correct: bool  # right the first time
    questions: int  # asked on this point, follow-ups included


class StudyItem(BaseModel):
    topic: str
    title: str
    kb: str  # the knowledge-base entry: prompts/<lang>/kb/<kb>.md
    kb_title: str


class Scorecard(BaseModel):
    topics: list[TopicScore]
    level: str  # senior, mid, junior, not_ready
    level_text: str
    score: float  # 1 per point right the first time, 0.5 right after follow-ups
    points: int
    study_next: list[str]  # two topics
    study: list[StudyItem] = Field(default_factory=list)


class InterviewAnswer(BaseModel):
    grade: InterviewGrade
    feedback: str
    next: InterviewQuestion | None  # the open question again when nothing was read
    scorecard: Scorecard | None


class InterviewTurn(BaseModel):
    step: int
    topic: str
    title: str  # the topic's title in the interview's language
    follow_up: int  # 0 for the point's own question, then 1 and 2
    text: str
    scenario: dict[str, Any] | None
    quantity: str
    expected: dict[str, Any] | None  # shown once graded
    answer: str | None
    given: dict[str, Any] | None
    correct: bool | None
    error_pct: float | None
    feedback: str | None


class InterviewRecord(BaseModel):
    interview_id: str
    language: Language
    level: int
    model: str
    gpu: str
    finished: bool
    turns: list[InterviewTurn]
    scorecard: Scorecard | None
