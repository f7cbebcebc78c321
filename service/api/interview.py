"""The mock interview over HTTP (docs/reference.md, "Mock interview"): start an interview, answer its
open question, read it back with its scorecard, export it as Markdown. An interview belongs to the API
key that started it (another key gets 404). A thin adapter over service/coach/interview/session.py."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from service.api.auth import OwnerDep
from service.api.errors import ApiError
from service.api.schemas import ERROR_RESPONSES, ErrorBody
from service.coach.coach import CoachError
from service.coach.interview.models import InterviewAnswer, InterviewRecord, InterviewStart
from service.coach.interview.session import Interviewer

router = APIRouter(tags=["coach"])


async def get_interviewer(request: Request) -> Interviewer:
    return request.app.state.interviewer


InterviewerDep = Annotated[Interviewer, Depends(get_interviewer)]


class InterviewRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    language: Literal["en", "zh"] = "en"
    level: int | None = Field(
        default=None,
        description="1-3: the key points an explanation needs; from 2 a right first answer goes one level "
        "deeper. Figures are graded alike at every level. Default 2",
    )


class InterviewAnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str = Field(description='free text in English or Chinese ("about 112 GB", "放不下", "128 KB")')


def _api_error(err: CoachError) -> ApiError:
    return ApiError(
        err.status_code, err.message, field=err.field, accepted=err.accepted, suggestions=err.suggestions
    )


@router.post(
    "/v1/coach/interviews",
    summary="Start a mock interview: its first question",
    response_model=InterviewStart,
    responses={code: ERROR_RESPONSES[code] for code in (400, 413, 415, 422)},
)
async def start_interview(
    body: InterviewRequest, interviewer: InterviewerDep, owner: OwnerDep
) -> InterviewStart:
    try:
        return await interviewer.start(body.language, body.level, owner)
    except CoachError as err:
        raise _api_error(err) from None


@router.post(
    "/v1/coach/interviews/{interview_id}/answers",
    summary="Answer the interview's open question: the grade, feedback, the next question or the scorecard",
    response_model=InterviewAnswer,
    responses={
        **{code: ERROR_RESPONSES[code] for code in (400, 404, 413, 415, 422)},
        409: {"model": ErrorBody, "description": "the interview is finished, or the question was answered"},
    },
)
async def answer_interview(
    interview_id: str, body: InterviewAnswerRequest, interviewer: InterviewerDep, owner: OwnerDep
) -> InterviewAnswer:
    try:
        return await interviewer.answer(interview_id, body.answer, owner)
    except CoachError as err:
        raise _api_error(err) from None


@router.get(
    "/v1/coach/interviews/{interview_id}",
    summary="A mock interview: its transcript and, once finished, its scorecard",
    response_model=InterviewRecord,
    responses={404: ERROR_RESPONSES[404]},
)
async def get_interview(interview_id: str, interviewer: InterviewerDep, owner: OwnerDep) -> InterviewRecord:
    try:
        return await interviewer.record(interview_id, owner)
    except CoachError as err:
        raise _api_error(err) from None


@router.get(
    "/v1/coach/interviews/{interview_id}/markdown",
    summary="A mock interview as Markdown: the scorecard, what to study next, the transcript",
    response_class=PlainTextResponse,
    # the error body is JSON whatever the route's own media type (errors.py's handler)
    responses={
        200: {"content": {"text/markdown": {}}},
        404: {
            **ERROR_RESPONSES[404],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        },
    },
)
async def interview_markdown(
    interview_id: str, interviewer: InterviewerDep, owner: OwnerDep
) -> PlainTextResponse:
    try:
        text = await interviewer.markdown(interview_id, owner)
    except CoachError as err:
        raise _api_error(err) from None
    return PlainTextResponse(text, media_type="text/markdown; charset=utf-8")
