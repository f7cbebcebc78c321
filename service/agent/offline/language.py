"""Which language a question is in: Chinese when it carries enough Han characters, else English."""

from __future__ import annotations

import re

from service.agent.events import Language

_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def han_count(text: str) -> int:
    return len(_HAN.findall(text))


def detect_language(text: str, default: Language = "en") -> Language:
    """'zh' when Han characters are present in a meaningful share, 'en' for Latin text.

    Chinese questions are full of Latin model names ("Qwen2.5-7B 全参微调要多少显存"), so a
    couple of Han characters already decide; text with neither (e.g. "bs=16?") keeps `default`.
    """
    han = han_count(text)
    if han >= 2 or (han == 1 and not _LATIN_WORD.search(text)):
        return "zh"
    words = _LATIN_WORD.findall(text)
    informative = [w for w in words if w.lower() not in _NEUTRAL_TOKENS]
    if not informative and han == 0:
        return default
    return "en"


# Tokens that appear in questions of both languages and say nothing about the language.
_NEUTRAL_TOKENS = frozenset(
    {"bs", "tp", "pp", "dp", "fp", "bf", "lora", "qlora", "zero", "gb", "gib", "int", "batch", "k"}
)
