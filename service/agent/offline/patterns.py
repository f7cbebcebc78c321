"""The parser's regular expressions with a literal pre-check: `compile`, `search`, `finditer`, ... as in `re`.

Most of the parser's patterns start with a look-behind (`(?<![a-z0-9.])`) and alternatives, so the regex
engine tries every position of the question against every alternative: 5-15 us per search, and a question
goes through ~90 of them. Almost all of those patterns cannot match unless some literal occurs in the text
(`epoch` or `轮`, `batch` or `bs` ...). `required_literals` reads that set from the parsed pattern (Python's
own parser, `re._parser`), and `search` first checks whether any of them is in the text, a substring test
in C. Exact by construction: a match contains one of the literals, so when none occurs there is no match
and the regex is never run; otherwise the result is the regex's own. A pattern without such a set (or one
this module cannot read) is used as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

try:  # Python >= 3.11
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    _c = _p = None

Pattern = re.Pattern
Match = re.Match
escape = re.escape
MAX_CLASS_CHARS = 16  # a character class stands for its characters when it has at most this many


def required_literals(pattern: str, flags: int = 0) -> frozenset[str] | None:
    """Strings one of which occurs in every match of `pattern` (None: no such set is known)."""
    if _p is None or flags & (re.IGNORECASE | re.LOCALE):
        return None
    try:
        parsed = _p.parse(pattern, flags)
    except Exception:
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    found = _sequence(list(parsed))
    return None if found is None or "" in found else frozenset(found)


def _better(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    """The more selective of two requirements: the longer shortest literal, then the fewer literals."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b, key=lambda s: (min(map(len, s)), -len(s)))


def _sequence(items: list[tuple[Any, Any]]) -> set[str] | None:
    best: set[str] | None = None
    run = ""
    for op, av in items:
        if op is _c.LITERAL:
            run += chr(av)
            continue
        if run:
            best = _better(best, {run})
            run = ""
        best = _better(best, _item(op, av))
    if run:
        best = _better(best, {run})
    return best


def _item(op: Any, av: Any) -> set[str] | None:
    if op is _c.SUBPATTERN:
        _group, add_flags, _del_flags, inner = av
        return None if add_flags & re.IGNORECASE else _sequence(list(inner))
    if op is _c.ATOMIC_GROUP:
        return _sequence(list(av))
    if op is _c.BRANCH:
        union: set[str] = set()
        for alternative in av[1]:
            found = _sequence(list(alternative))
            if found is None:
                return None
            union |= found
        return union
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
        low, _high, inner = av
        return _sequence(list(inner)) if low >= 1 else None
    if op is _c.IN:
        chars: set[str] = set()
        for member, value in av:
            if member is _c.LITERAL:
                chars.add(chr(value))
            elif member is _c.RANGE and value[1] - value[0] < MAX_CLASS_CHARS:
                chars.update(chr(c) for c in range(value[0], value[1] + 1))
            else:  # NEGATE, CATEGORY, a wide range
                return None
        return chars if 0 < len(chars) <= MAX_CLASS_CHARS else None
    return None  # look-arounds, anchors, ANY, back references, conditionals: no requirement


class Prefiltered:
    """A compiled pattern that runs only when one of its required literals is in the text."""

    __slots__ = ("_literals", "_pattern")

    def __init__(self, pattern: re.Pattern[str], literals: frozenset[str]) -> None:
        self._pattern = pattern
        self._literals = tuple(sorted(literals, key=len, reverse=True))

    def _possible(self, text: str) -> bool:
        for literal in self._literals:  # noqa: SIM110 -- a plain loop: any() over a generator is slower here
            if literal in text:
                return True
        return False

    def search(self, text: str, *args: Any) -> re.Match[str] | None:
        if not args:  # `_possible`, inlined: the parser's most frequent call
            for literal in self._literals:
                if literal in text:
                    break
            else:
                return None
        return self._pattern.search(text, *args)

    def match(self, text: str, *args: Any) -> re.Match[str] | None:
        if not args and not self._possible(text):
            return None
        return self._pattern.match(text, *args)

    def fullmatch(self, text: str, *args: Any) -> re.Match[str] | None:
        if not args and not self._possible(text):
            return None
        return self._pattern.fullmatch(text, *args)

    def finditer(self, text: str, *args: Any) -> Iterator[re.Match[str]]:
        if not args:  # `_possible`, inlined (the model and task rules try each of theirs on every question)
            for literal in self._literals:
                if literal in text:
                    break
            else:
                return iter(())
        return self._pattern.finditer(text, *args)

    def findall(self, text: str, *args: Any) -> list[Any]:
        if not args and not self._possible(text):
            return []
        return self._pattern.findall(text, *args)

    def sub(self, repl: Any, text: str, count: int = 0) -> str:
        if not self._possible(text):
            return text
        return self._pattern.sub(repl, text, count)

    def __getattr__(self, name: str) -> Any:  # pattern, groups, groupindex, flags, split, ...
        return getattr(self._pattern, name)

    def __repr__(self) -> str:
        return f"Prefiltered({self._pattern!r}, {self._literals!r})"


@lru_cache(maxsize=1024)
def compile(pattern: str, flags: int = 0) -> Any:
    """`re.compile(pattern, flags)`, wrapped in a literal pre-check when the pattern has one."""
    compiled = re.compile(pattern, flags)
    literals = required_literals(pattern, flags)
    return compiled if literals is None else Prefiltered(compiled, literals)


def search(pattern: str, text: str, flags: int = 0) -> re.Match[str] | None:
    return compile(pattern, flags).search(text)


def match(pattern: str, text: str, flags: int = 0) -> re.Match[str] | None:
    return compile(pattern, flags).match(text)


def fullmatch(pattern: str, text: str, flags: int = 0) -> re.Match[str] | None:
    return compile(pattern, flags).fullmatch(text)


def finditer(pattern: str, text: str, flags: int = 0) -> Iterator[re.Match[str]]:
    return compile(pattern, flags).finditer(text)


def findall(pattern: str, text: str, flags: int = 0) -> list[Any]:
    return compile(pattern, flags).findall(text)


def sub(pattern: str, repl: Any, text: str, count: int = 0, flags: int = 0) -> str:
    return compile(pattern, flags).sub(repl, text, count)
