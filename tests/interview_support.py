"""Answers a candidate would give to a stored interview question (the `expected` and `spec` columns of
coach_interview_turns): right or wrong, from the estimator's figure, as people write them in English or
Chinese (a figure with units, a figure with its reasoning, yes/no, a count, an explanation)."""

from __future__ import annotations

from typing import Any

from service.coach.grading import concept_points

YES = {"en": "yes, it fits", "zh": "放得下"}
NO = {"en": "no, it does not fit", "zh": "放不下"}


def figure(b: float, language: str) -> str:
    if b >= 2**30:
        return f"about {b / 2**30:.2f} GiB" if language == "en" else f"大概{b / 10**9:.2f}GB"
    if b >= 2**20:
        return f"about {b / 2**20:.2f} MiB" if language == "en" else f"大概{b / 10**6:.2f}MB"
    return f"{b / 2**10:.1f} KiB" if language == "en" else f"大概{b / 1000:.1f}KB"


def right_answer(expected: dict[str, Any], spec: dict[str, Any], language: str) -> str:
    if "fits" in expected:
        return YES[language] if expected["fits"] else NO[language]
    if "count" in expected:
        n = expected["count"]
        return f"about {n} sequences" if language == "en" else f"大概 {n} 条"
    if "key_points" in expected:  # every key point's own wording
        points = concept_points(spec["facts"]["concept"], language)
        return ("; " if language == "en" else "；").join(label for label, _ in points.values())
    return figure(expected["bytes"], language)


def wrong_answer(expected: dict[str, Any], spec: dict[str, Any], language: str) -> str:
    if "fits" in expected:
        return NO[language] if expected["fits"] else YES[language]
    if "count" in expected:
        n = expected["count"] * 3 + 1
        return f"{n} sequences" if language == "en" else f"{n} 条"
    if "key_points" in expected:
        return "no idea, it depends" if language == "en" else "不清楚，看情况吧"
    return figure(expected["bytes"] * 3, language)
