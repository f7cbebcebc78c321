"""The interview coach over HTTP (docs/reference.md, "HTTP"): topics, the next question of a
session, grading a free-text answer, a session's record. A thin adapter over service/coach/coach.py."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from service.api.auth import OwnerDep
from service.api.errors import ApiError
from service.api.schemas import ERROR_RESPONSES
from service.coach.coach import AnswerOut, Coach, CoachError, QuestionOut, SessionOut, Topic, answer_language

router = APIRouter(tags=["coach"])


async def get_coach(request: Request) -> Coach:
    return request.app.state.coach


CoachDep = Annotated[Coach, Depends(get_coach)]


class QuestionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    language: Literal["en", "zh"] = "en"
    topic: str | None = Field(
        default=None, description="a topic id from GET /v1/coach/topics; none = adaptive"
    )
    difficulty: int | None = Field(default=None, description="1-3; none = the session's current level")
    session_id: str | None = Field(default=None, description="continue this session; none = a new one")


class AnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str
    question_id: str
    answer: str = Field(description='free text in English or Chinese ("about 112 GB", "放不下", "hint")')


def _api_error(err: CoachError) -> ApiError:
    return ApiError(
        err.status_code, err.message, field=err.field, accepted=err.accepted, suggestions=err.suggestions
    )


@router.get("/v1/coach/topics", summary="The coach's topics in a language", response_model=list[Topic])
async def coach_topics(language: Annotated[Literal["en", "zh"], Query()] = "en") -> list[Topic]:
    return Coach.topics(language)


@router.post(
    "/v1/coach/questions",
    summary="The next question of a coach session (a new session without session_id)",
    response_model=QuestionOut,
    responses={code: ERROR_RESPONSES[code] for code in (400, 404, 413, 415, 422)},
)
async def coach_question(body: QuestionRequest, coach: CoachDep, owner: OwnerDep) -> QuestionOut:
    try:
        return await coach.ask(body.language, body.topic, body.difficulty, body.session_id, owner=owner)
    except CoachError as err:
        raise _api_error(err) from None


@router.post(
    "/v1/coach/answers",
    summary="Grade a free-text answer against the estimator ('hint' / '提示' asks for a hint)",
    response_model=AnswerOut,
    responses={code: ERROR_RESPONSES[code] for code in (400, 404, 413, 415, 422)},
)
async def coach_answer(body: AnswerRequest, coach: CoachDep, owner: OwnerDep, request: Request) -> AnswerOut:
    try:
        graded = await coach.answer(body.session_id, body.question_id, body.answer, owner=owner)
    except CoachError as err:
        raise _api_error(err) from None
    observability = getattr(request.app.state, "observability", None)
    if observability is not None:  # the operator's answers by channel (service/observability)
        observability.count_coach_answer(answer_language(body.answer, "en"), graded.correct is not None)
    return graded


@router.get(
    "/v1/coach/sessions/{session_id}",
    summary="A coach session: its questions, answers, grades and the score by topic",
    response_model=SessionOut,
    responses={404: ERROR_RESPONSES[404]},
)
async def coach_session(session_id: str, coach: CoachDep, owner: OwnerDep) -> SessionOut:
    try:
        return await coach.session(session_id, owner=owner)
    except CoachError as err:
        raise _api_error(err) from None
