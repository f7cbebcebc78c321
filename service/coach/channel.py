"""The coach in a chat thread (Slack's `/vram quiz [topic]`, any other chat channel): one function a
channel calls with the thread's key and the text it received, returning the text to post.

    reply = await coach_turn(coach, key="slack:C123:1712.55", text="quiz kv_cache", language=None)

"quiz [topic]" (or "测验 [主题]") starts a question in the thread; any other text answers the thread's
open question ("hint"/"提示" for a hint); the graded reply ends with the score and the next question.
The session id is the thread's key, so answers in the thread are graded against that thread's question.
"""

from __future__ import annotations

import re

from service.coach.coach import Coach, CoachError, answer_language
from service.coach.text import fill

START = re.compile(r"^\s*(?:/vram\s+)?(?:quiz|测验|练习)\b\s*(?P<topic>[\w.-]*)\s*$", re.IGNORECASE)


async def thread_session(coach: Coach, key: str) -> str | None:
    """The coach session of a chat thread where a quiz was posted (`start_quiz`), or None."""
    return await coach.store.session_for_thread(key)


async def start_quiz(coach: Coach, topic: str | None, language: str) -> tuple[str, str]:
    """A new session's first question: (session_id, text to post). The channel posts it, then links the
    posted message's thread to the session (`coach.store.link_thread(key, session_id)`)."""
    q = await coach.ask(language, topic or None, None, None)
    return q.session_id, q.text


async def coach_turn(coach: Coach, key: str, text: str, language: str | None = None) -> str:
    """The coach's reply to `text` in the thread `key` (plain text with **bold** marks)."""
    lang = language or answer_language(text, "en")
    start = START.match(text)
    try:
        if start:
            q = await coach.ask(lang, start.group("topic") or None, None, key, create=True)
            return q.text
        open_q = await coach.open_question(key)
        if open_q is None:
            q = await coach.ask(lang, None, None, key, create=True)
            return q.text
        a = await coach.answer(key, open_q["id"], text)
        if a.correct is None:
            return a.explanation
        score = fill(
            open_q["language"],
            "feedback",
            "cli",
            "score",
            correct=a.score.correct,
            asked=a.score.asked,
            difficulty=a.next_difficulty,
        )
        nxt = await coach.ask(None, None, None, key)
        return f"{a.explanation}\n\n{score}\n\n{nxt.text}"
    except CoachError as e:
        accepted = f" Accepted: {e.accepted}." if e.accepted else ""
        near = f" Did you mean: {', '.join(e.suggestions)}?" if e.suggestions else ""
        return f"{e.message}.{near}{accepted}"
