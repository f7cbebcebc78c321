"""The mock interview on Slack: `/vram interview` (or `面试`) posts the interviewer's first question in the
channel; each reply in its thread is answered there with the feedback and the next question (a follow-up,
a deeper question or the next topic), and the scorecard at the end. A thin adapter over
service/coach/interview/session.py; the thread's key ("team:channel:ts") names the interview.
"""

from __future__ import annotations

from typing import Any

from service.coach.coach import CoachError
from service.coach.interview.models import InterviewAnswer, Scorecard
from service.coach.interview.session import Interviewer
from service.coach.interview.text import say
from service.slack.blocks import text_payload


def thread_key(team_id: str | None, channel: str, thread_ts: str) -> str:
    return f"{team_id}:{channel}:{thread_ts}"


async def interview_of_thread(
    interviewer: Interviewer | None, team_id: str | None, channel: str, thread_ts: str | None
) -> str | None:
    """The interview running in a thread, or None."""
    if interviewer is None or not thread_ts:
        return None
    return await interviewer.store.interview_for_thread(thread_key(team_id, channel, thread_ts))


async def post_interview(interviewer: Interviewer, client: Any, body: dict[str, Any], language: str) -> None:
    """Start an interview and post its first question in the command's channel; its thread is the
    interview's."""
    team, channel = body.get("team_id"), str(body.get("channel_id"))
    started = await interviewer.start(language, None, None)
    response = await client.chat_postMessage(channel=channel, **text_payload(started.question.text))
    await interviewer.store.link_thread(thread_key(team, channel, str(response["ts"])), started.interview_id)


def scorecard_text(card: Scorecard, language: str) -> str:
    """The scorecard in a message: the level, one line per topic, what to study."""
    lines = [f"**{card.level_text}** ({card.score:g}/{card.points})"]
    for t in card.topics:
        lines.append(f"- {t.title}: {say(language, 'grade', t.grade)} ({t.figure})")
    lines.append(say(language, "markdown", "study").lstrip("# "))
    for item in card.study:
        lines.append(f"- {item.title}: `prompts/{language}/kb/{item.kb}.md`")
    return "\n".join(lines)


def reply_text(result: InterviewAnswer, language: str) -> str:
    parts = [result.feedback]
    if result.next is not None:
        parts.append(result.next.text)
    if result.scorecard is not None:
        parts.append(scorecard_text(result.scorecard, language))
    return "\n\n".join(p for p in parts if p)


async def interview_reply(interviewer: Interviewer, interview_id: str, text: str) -> str:
    """The interviewer's reply to an answer posted in the interview's thread."""
    record = await interviewer.record(interview_id, None)
    try:
        result = await interviewer.answer(interview_id, text, None)
    except CoachError as e:
        accepted = f" Accepted: {e.accepted}." if e.accepted else ""
        return f"{e.message}.{accepted}"
    return reply_text(result, record.language)
