"""Texts filled from templates: `${name}` placeholders and `[[optional parts]]` (prompts/<lang>/assumptions.toml,
components.toml, formulas.toml). `fill` says each value as a sentence shows it (`value_text`); a [[part]] whose
values are missing or empty is left out. Each template is split once (cached) and filled piece by piece.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any, TypeVar

from tools.units import fmt_gib

PLACEHOLDER = re.compile(r"\$\{(\w+)\}")
_OPTIONAL = re.compile(r"\[\[(.*?)\]\]")


def value_text(name: str, value: Any, joiner: str = ", ") -> str:
    """A value as a sentence shows it: byte counts in GiB, integers with thousands separators, lists
    joined by `joiner` (the language's, prompts/<lang>/assumptions.toml [text] list_joiner)."""
    if value is None:
        return ""
    if name.endswith("_bytes") and isinstance(value, int):
        return fmt_gib(value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return joiner.join(value_text(name, v, joiner) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


# values whose equal keys are said alike once their type is known (not float: 0.0 and -0.0 are equal keys)
_SCALARS = frozenset({str, int, bool, type(None)})
T = TypeVar("T")


def remembered(said: Callable[[str, dict[str, Any], str], T]) -> Callable[[str, dict[str, Any], str], T]:
    """`said(name, values, language_or_joiner)` (a text of templates that never change), remembered when every
    value is plain (str, int, bool, None): the same few defaults and labels recur from answer to answer.
    The values' types are part of the key (1 and True are equal keys, and are said differently)."""

    @lru_cache(maxsize=4096)
    def of_plain(name: str, items: tuple[tuple[str, Any], ...], types: tuple[type, ...], last: str) -> T:
        return said(name, dict(items), last)

    @wraps(said)
    def text(name: str, values: dict[str, Any], last: str) -> T:
        types = tuple(map(type, values.values()))
        if _SCALARS.issuperset(types):
            return of_plain(name, tuple(values.items()), types, last)
        return said(name, values, last)

    return text


def fill(template: str, values: dict[str, Any], joiner: str = ", ") -> str:
    """`template` with its ${name}s filled; a [[part]] whose values are missing or empty is left out."""
    return _remembered_fill(template, values, joiner)


def _fill(template: str, values: dict[str, Any], joiner: str) -> str:
    said = {k: value_text(k, v, joiner) for k, v in values.items()}
    parts = _optional_parts(template)
    if len(parts) == 1:
        return fill_plain(template, said)
    if parts is _UNSPLIT or any("$" in v for v in said.values()):
        return _fill_in_two_passes(template, said)
    # each piece filled once: the same text as the two passes when no `$` can start a placeholder that
    # spans two pieces or comes from a value (`_optional_parts`, the check above)
    out = [fill_plain(parts[0], said)]
    for i in range(1, len(parts), 2):
        inner = parts[i]
        if all(said.get(n) for n in _placeholders(inner)):
            out.append(fill_plain(inner, said))
        out.append(fill_plain(parts[i + 1], said))
    return "".join(out)


def _fill_in_two_passes(template: str, said: dict[str, str]) -> str:
    """`fill` as written: the [[part]]s filled or left out, then the whole text filled."""

    def optional(m: re.Match[str]) -> str:
        names = PLACEHOLDER.findall(m.group(1))
        return fill_plain(m.group(1), said) if all(said.get(n) for n in names) else ""

    return fill_plain(_OPTIONAL.sub(optional, template), said)


_UNSPLIT: tuple[str, ...] = ("", "", "")  # a template whose pieces are not filled one by one


@lru_cache(maxsize=1024)
def _optional_parts(template: str) -> tuple[str, ...]:
    """`template` as [text, [[part]], text, ..., text] (`_OPTIONAL.split`); `_UNSPLIT` when it has [[parts]]
    and a `$` outside its ${name}s (which the two passes of `fill` could join into a placeholder)."""
    parts = tuple(_OPTIONAL.split(template))
    if len(parts) > 1 and template.count("$") != len(PLACEHOLDER.findall(template)):
        return _UNSPLIT
    return parts


@lru_cache(maxsize=1024)
def _placeholders(template: str) -> tuple[str, ...]:
    return tuple(PLACEHOLDER.findall(template))


def fill_plain(template: str, said: dict[str, str]) -> str:
    """`template` with each ${name} that `said` has replaced by its text (others left as written)."""
    parts = _plain_parts(template)
    if len(parts) == 1:
        return template
    out = [parts[0]]
    for i in range(1, len(parts), 2):
        name = parts[i]
        out.append(said[name] if name in said else "${" + name + "}")
        out.append(parts[i + 1])
    return "".join(out)


@lru_cache(maxsize=4096)
def _plain_parts(template: str) -> tuple[str, ...]:
    """`template` as [text, name, text, ..., text] (`PLACEHOLDER.split`), once per template."""
    return tuple(PLACEHOLDER.split(template))


_remembered_fill = remembered(_fill)
