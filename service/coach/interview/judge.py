"""With an LLM configured, a second reader of explanations: which of the rubric's key points
(prompts/<lang>/coach/concepts.toml) an answer makes in words the rubric's patterns miss. It only ever adds
key points to an explanation's grade; figures are never judged by it (they are the estimator's).

A failing, slow or rambling endpoint changes nothing: the rubric's reading stands.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable

from langchain_core.messages import HumanMessage, SystemMessage

from service.agent.llm.endpoint import ChatModelHandle
from service.coach.grading import concept_points
from service.coach.interview.text import say
from service.coach.text import strings

log = logging.getLogger(__name__)
JUDGE_TIMEOUT_S = 20.0
_LIST = re.compile(r"\[[^\[\]]*\]")


class ConceptJudge:
    """Asks the configured chat model which key points an explanation covers."""

    def __init__(self, models: Callable[[], ChatModelHandle], timeout_s: float = JUDGE_TIMEOUT_S) -> None:
        self.models = models
        self.timeout_s = timeout_s

    async def points(self, concept: str, answer: str, language: str) -> list[str]:
        """The ids of the key points of `concept` the model finds in `answer` (none on any failure)."""
        labels = {pid: label for pid, (label, _) in concept_points(concept, language).items()}
        question = strings(language, "concepts")[concept]["question"]
        body = json.dumps({"question": question, "key_points": labels, "answer": answer}, ensure_ascii=False)
        messages = [SystemMessage(say(language, "judge", "system")), HumanMessage(body)]
        handle = self.models()
        try:
            reply = await asyncio.wait_for(handle.model.ainvoke(messages), self.timeout_s)
        except Exception:  # the endpoint is down, slow or refuses: the rubric's reading stands
            log.warning("the concept judge failed; grading on the rubric alone", exc_info=True)
            return []
        finally:
            await handle.aclose()
        return known_points(str(reply.content), labels)


def known_points(text: str, labels: dict[str, str]) -> list[str]:
    """The key point ids of the first JSON list in `text` that the rubric has, in the rubric's order."""
    found = _LIST.search(text)
    if found is None:
        return []
    try:
        said = json.loads(found.group(0))
    except json.JSONDecodeError:
        return []
    return [pid for pid in labels if pid in {str(x) for x in said}]
