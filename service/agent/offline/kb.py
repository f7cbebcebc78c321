"""The curated knowledge base: prompts/<lang>/kb/*.md, each with a small front matter.

Front matter (between '---' lines): `topic`, `keywords` (comma-separated, in that file's
language), optional `example` (a Scenario as one-line JSON whose estimate supplies the
figures the text cites). Topic matching uses the keywords of both languages, because
people mix them ("A3B 的 MoE 为什么...").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from service.agent.prompt_files import LANGUAGES, list_prompt_dir, read_prompt


@dataclass(frozen=True)
class KbEntry:
    topic: str
    language: str
    title: str
    keywords: tuple[str, ...]
    body: str
    example: dict[str, Any] = field(default_factory=dict)  # scenario whose estimate the text cites
    compare: dict[str, Any] = field(default_factory=dict)  # a second scenario (${cmp_...} placeholders)


def _parse(language: str, text: str) -> KbEntry:
    meta: dict[str, str] = {}
    body = text
    if text.startswith("---"):
        _, head, body = text.split("---", 2)
        for line in head.strip().splitlines():
            key, _, value = line.partition(":")
            meta[key.strip()] = value.strip()
    keywords = tuple(k.strip().lower() for k in meta.get("keywords", "").split(",") if k.strip())
    example = json.loads(meta["example"]) if meta.get("example") else {}
    compare = json.loads(meta["compare"]) if meta.get("compare") else {}
    return KbEntry(
        topic=meta["topic"],
        language=language,
        title=meta.get("title", meta["topic"]),
        keywords=keywords,
        body=body.strip() + "\n",
        example=example,
        compare=compare,
    )


@lru_cache(maxsize=2)
def load_kb(language: str) -> dict[str, KbEntry]:
    """topic -> entry for one language."""
    entries = (
        _parse(language, read_prompt(language, "kb", name)) for name in list_prompt_dir(language, "kb")
    )
    return {e.topic: e for e in entries}


def kb_entry(topic: str, language: str) -> KbEntry | None:
    """The entry in `language`; its example scenarios come from the English entry when it has none."""
    entry = load_kb(language).get(topic)
    english = load_kb("en").get(topic)
    if entry is None:
        return english
    if english is not None and not entry.example:
        return replace(entry, example=english.example, compare=english.compare)
    return entry


def _keyword_pattern(keyword: str) -> re.Pattern[str]:
    if keyword.isascii():
        return re.compile(rf"(?<![a-z0-9]){re.escape(keyword)}(?![a-z0-9])")
    # Chinese keywords are matched without spaces: people write "QLoRA 和 LoRA" and "qlora和lora" alike
    return re.compile(re.escape(re.sub(r"\s+", "", keyword)))


@lru_cache(maxsize=1)
def _topic_patterns() -> tuple[tuple[str, tuple[tuple[re.Pattern[str], int], ...]], ...]:
    merged: dict[str, list[str]] = {}
    for language in LANGUAGES:
        for entry in load_kb(language).values():
            merged.setdefault(entry.topic, []).extend(entry.keywords)
    return tuple(
        (topic, tuple((_keyword_pattern(k), len(k)) for k in dict.fromkeys(words)))
        for topic, words in sorted(merged.items())
    )


def match_topic(low: str) -> str | None:
    """The knowledge-base topic whose keywords cover the most of the (lower-cased) question."""
    best: tuple[int, str] | None = None
    compact = re.sub(r"\s+", "", low)
    for topic, patterns in _topic_patterns():
        score = sum(
            weight
            for pattern, weight in patterns
            if pattern.search(low if pattern.pattern.isascii() else compact)
        )
        if score and (best is None or score > best[0]):
            best = (score, topic)
    return best[1] if best else None
