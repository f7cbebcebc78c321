"""Answers a person would write to a stored coach question, right or wrong, from its estimator figure
(the `expected` and `spec` columns of coach_questions), for the terminal, Slack and browser tests."""

from __future__ import annotations

from typing import Any

from service.coach.grading import concept_points

YES = {"en": "yes", "zh": "能"}
NO = {"en": "no", "zh": "不能"}


def _figure(b: float, language: str) -> str:
    if b >= 2**30:
        return f"about {b / 2**30:.2f} GiB" if language == "en" else f"大概{b / 10**9:.2f}GB"
    return f"about {b / 2**20:.3f} MiB" if language == "en" else f"大概{b / 10**6:.3f}MB"


def right_answer(expected: dict[str, Any], spec: dict[str, Any], language: str) -> str:
    if "fits" in expected:
        return YES[language] if expected["fits"] else NO[language]
    if "count" in expected:
        n = expected["count"]
        return f"{n} GPUs" if language == "en" else f"需要 {n} 张卡"
    if "key_points" in expected:  # every key point's own wording
        points = concept_points(spec["facts"]["concept"], language)
        return ("; " if language == "en" else "；").join(label for label, _ in points.values())
    return _figure(expected["bytes"], language)


def wrong_answer(expected: dict[str, Any], spec: dict[str, Any], language: str) -> str:
    if "fits" in expected:
        return NO[language] if expected["fits"] else YES[language]
    if "count" in expected:
        n = expected["count"] * 3 + 1
        return f"{n} GPUs" if language == "en" else f"需要 {n} 张卡"
    if "key_points" in expected:
        return "it depends" if language == "en" else "看情况"
    return _figure(expected["bytes"] * 3, language)
