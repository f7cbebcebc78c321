"""The realistic-question suite (tests/parser_suite.py): every stated field, the figure asked for, the concept topic."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from service.agent.base import ConversationState
from service.agent.events import DoneEvent
from service.agent.offline import OfflineAgent
from service.agent.offline.parser import parse_question
from tests.parser_suite import CONCEPTS, ESTIMATES
from tests.parser_suite_round2 import CASES as ROUND2


def _is_zh(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def test_the_suite_is_large_and_half_chinese() -> None:
    questions = [q for q, _, _ in ESTIMATES] + [q for q, _ in CONCEPTS]
    assert len(questions) >= 400 and len(set(questions)) == len(questions)
    zh = sum(_is_zh(q) for q in questions)
    assert 0.45 <= zh / len(questions) <= 0.55, (zh, len(questions))


def _arch_subset(parsed: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """Stated shapes are asserted exactly; the rest of the architecture comes from the base model."""
    if "architecture" not in expected:
        return parsed
    arch = parsed.get("architecture") or {}
    return {**parsed, "architecture": {k: arch.get(k) for k in expected["architecture"]}}


@pytest.mark.parametrize(("question", "expected", "asks"), ESTIMATES)
def test_estimate_questions(question: str, expected: dict[str, Any], asks: str | None) -> None:
    parsed = parse_question(question)
    assert parsed.intent == "estimate", (parsed.intent, parsed.topic)
    assert _arch_subset(parsed.scenario, expected) == expected
    assert parsed.asks == asks
    assert parsed.language == ("zh" if _is_zh(question) else "en")


@pytest.mark.parametrize(("question", "topic"), CONCEPTS)
def test_concept_questions_get_their_topic(question: str, topic: str) -> None:
    parsed = parse_question(question)
    assert parsed.topic == topic

    async def run() -> DoneEvent:
        events = [e async for e in OfflineAgent(preload=False).stream(question, ConversationState())]
        assert isinstance(events[-1], DoneEvent), events[-1]
        return events[-1]

    answer = asyncio.run(run()).answer
    assert answer.scenario is None and answer.estimate is None  # a concept answer, not "Which model?"
    assert "n/a" not in answer.answer


def test_round_two_adds_a_hundred_questions_half_chinese() -> None:
    assert len(ROUND2) >= 100 and len({q for q, *_ in ROUND2}) == len(ROUND2)
    zh = sum(_is_zh(q) for q, *_ in ROUND2)
    assert 0.45 <= zh / len(ROUND2) <= 0.55, (zh, len(ROUND2))
    assert {q for q, *_ in ROUND2} <= {q for q, _, _ in ESTIMATES}


@pytest.mark.parametrize(("question", "expected", "asks", "filled"), ROUND2, ids=[q[:50] for q, *_ in ROUND2])
def test_round_two_says_its_own_readings(
    question: str, expected: dict[str, Any], asks: str | None, filled: dict[str, str]
) -> None:
    """What the parser chose itself (nodes x GPUs per node, TRL's default prompt or completion, a distill's
    catalog entry, the size of a name the catalog lacks) is an assumption with its code, and nothing else is."""
    parsed = parse_question(question)
    assert {field: why.code for field, why in parsed.filled.items()} == filled
