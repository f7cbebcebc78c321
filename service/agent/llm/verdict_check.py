"""The semantic half of grounding: a verdict word beside a total must match that total's `fits`.

"It fits comfortably: 117.17 GiB per GPU" passes the figure check (117.17 GiB is the tool's total)
but says the opposite of the estimator's verdict for it. A sentence that states a verdict (English or
Chinese) and cites a total the tool returned (the job's, or a suggestion's) must agree with the
verdict the tool gave for that total; if every total it cites disagrees, the sentence is refused.
"""

from __future__ import annotations

import re

from service.agent.llm.grounding import Figure, find_figures

# negations first: "does not fit" contains "fit"
_NEGATIVE = re.compile(
    r"(?i:\b(?:does ?n[o']t|do ?n[o']t|won'?t|will not|would not|wouldn'?t|cannot|can'?t|not) fit\b"
    r"|\bnot enough\b|\btoo (?:big|large)\b|\bout of memory\b|\bOOM\b|\bexceeds?\b|\bshort by\b)"
    r"|放不下|装不下|不够|超出|爆显存"
)
_POSITIVE = re.compile(
    r"(?i:\bfits?\b|\bfit comfortably\b|\benough (?:memory|vram)\b)|放得下|装得下|能放下|够用|足够"
)


def verdict_of(sentence: str) -> bool | None:
    """True for "it fits", False for "it does not fit", None for no verdict word."""
    if _NEGATIVE.search(sentence):
        return False
    if _POSITIVE.search(sentence):
        return True
    return None


def contradicted(sentence: str, verdicts: list[tuple[int, bool]]) -> list[Figure]:
    """The totals the sentence cites whose verdict it contradicts (empty when it agrees or states none)."""
    said = verdict_of(sentence)
    if said is None or not verdicts:
        return []
    bad: list[Figure] = []
    for fig in find_figures(sentence):
        cited = [
            fits for total, fits in verdicts if any(lo <= total <= hi for lo, hi in fig.byte_intervals())
        ]
        if cited and all(fits != said for fits in cited):
            bad.append(fig)
    return bad
