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


def _keyword_check(keyword: str) -> tuple[str, re.Pattern[str] | None, bool]:
    """How one keyword is checked: (literal, word-boundary pattern, against the question without spaces).
    The literal must occur in the question (a substring test in C rules out nearly every keyword at once);
    an ASCII keyword must also stand as a word, not inside a longer one."""
    if keyword.isascii():
        return keyword, re.compile(rf"(?<![a-z0-9]){re.escape(keyword)}(?![a-z0-9])"), False
    # Chinese keywords are matched without spaces: people write "QLoRA 和 LoRA" and "qlora和lora" alike
    literal = re.sub(r"\s+", "", keyword)
    return literal, None, not literal.isascii()


@dataclass(frozen=True)
class _TopicIndex:
    topics: tuple[str, ...]  # sorted: on equal scores the first one wins
    on_words: tuple[
        tuple[str, re.Pattern[str] | None, tuple[tuple[int, int], ...]], ...
    ]  # checked on the question
    on_compact: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # on the question without spaces


@lru_cache(maxsize=1)
def _topic_index() -> _TopicIndex:
    """Every distinct keyword once, with the topics it scores for: (topic's index, weight = its length)."""
    merged: dict[str, list[str]] = {}
    for language in LANGUAGES:
        for entry in load_kb(language).values():
            merged.setdefault(entry.topic, []).extend(entry.keywords)
    topics = tuple(sorted(merged))
    scores: dict[str, list[tuple[int, int]]] = {}
    for t, topic in enumerate(topics):
        for k in dict.fromkeys(merged[topic]):
            scores.setdefault(k, []).append((t, len(k)))
    on_words, on_compact = [], []
    for k, weights in scores.items():
        literal, bounded, compact = _keyword_check(k)
        if compact:
            on_compact.append((literal, tuple(weights)))
        else:
            on_words.append((literal, bounded, tuple(weights)))
    return _TopicIndex(topics, tuple(on_words), tuple(on_compact))


def match_topic(low: str) -> str | None:
    """The knowledge-base topic whose keywords cover the most of the (lower-cased) question (each keyword
    counts its length once; on equal scores the first topic in sorted order)."""
    index = _topic_index()
    compact = re.sub(r"\s+", "", low)
    score = [0] * len(index.topics)
    for literal, bounded, weights in index.on_words:
        if literal in low and (bounded is None or bounded.search(low) is not None):
            for t, weight in weights:
                score[t] += weight
    for literal, weights in index.on_compact:
        if literal in compact:
            for t, weight in weights:
                score[t] += weight
    best = max(score, default=0)
    return index.topics[score.index(best)] if best else None
