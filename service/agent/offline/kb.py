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


_Check = tuple[
    str, re.Pattern[str] | None, tuple[tuple[int, int], ...]
]  # literal, word pattern, (topic, weight)


@dataclass(frozen=True)
class _TopicIndex:
    topics: tuple[str, ...]  # sorted: on equal scores the first one wins
    # the keywords by the first two characters of their literal (a question holding none of those pairs holds
    # none of the literals: only the keywords of its own pairs are checked), on the question as written and
    # without spaces; literals of one character are always checked
    on_words: dict[str, tuple[_Check, ...]]
    on_compact: dict[str, tuple[_Check, ...]]


def _by_pair(checks: list[_Check]) -> dict[str, tuple[_Check, ...]]:
    index: dict[str, list[_Check]] = {}
    for check in checks:
        index.setdefault(check[0][:2], []).append(check)
    return {pair: tuple(items) for pair, items in index.items()}


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
    on_words: list[_Check] = []
    on_compact: list[_Check] = []
    for k, weights in scores.items():
        literal, bounded, compact = _keyword_check(k)
        (on_compact if compact else on_words).append((literal, bounded, tuple(weights)))
    return _TopicIndex(topics, _by_pair(on_words), _by_pair(on_compact))


def _pairs(text: str) -> set[str]:
    """Every two-character substring of `text`, and every single character (the one-character literals)."""
    return {text[i : i + 2] for i in range(len(text) - 1)} | set(text)


def match_topic(low: str) -> str | None:
    """The knowledge-base topic whose keywords cover the most of the (lower-cased) question (each keyword
    counts its length once; on equal scores the first topic in sorted order)."""
    index = _topic_index()
    score = [0] * len(index.topics)
    # the Chinese keywords are not ASCII: an ASCII question holds none of them
    checked = (
        [(low, index.on_words)]
        if low.isascii()
        else [(low, index.on_words), (re.sub(r"\s+", "", low), index.on_compact)]
    )
    for text, by_pair in checked:
        for pair in _pairs(text) & by_pair.keys():
            for literal, bounded, weights in by_pair[pair]:
                if literal in text and (bounded is None or bounded.search(low) is not None):
                    for t, weight in weights:
                        score[t] += weight
    best = max(score, default=0)
    return index.topics[score.index(best)] if best else None
