"""`Template`: string.Template whose `safe_substitute` splits each template text once (cached) into its
literal pieces and placeholders, instead of a regex pass with a Python callback per placeholder every time
(an answer fills a few hundred templates: a tenth of the offline agent's own time). Same result as
`string.Template.safe_substitute` for every text: `$$` is `$`, `$name` / `${name}` are replaced when the
mapping has them and left as written otherwise, a lone `$` stays."""

from __future__ import annotations

import string
from collections import ChainMap
from collections.abc import Mapping
from functools import lru_cache
from re import Pattern
from typing import Any

_NO_MAPPING: dict[str, Any] = {}
# a template text read for filling: its leading literal text, then per placeholder (name, the placeholder as
# written, the literal text up to the next placeholder)
Pieces = tuple[str, tuple[tuple[str, str, str], ...]]


@lru_cache(maxsize=4096)
def _pieces(pattern: Pattern[str], delimiter: str, text: str) -> Pieces:
    """`text` as literal text and (name, as written, literal text after it) placeholders, in order."""
    literals = [""]
    placeholders: list[tuple[str, str]] = []
    end = 0
    for mo in pattern.finditer(text):
        literals[-1] += text[end : mo.start()]
        name = mo.group("named") or mo.group("braced")
        if name is not None:
            placeholders.append((name, mo.group()))
            literals.append("")
        elif mo.group("escaped") is not None:
            literals[-1] += delimiter
        else:  # invalid: kept as written
            literals[-1] += mo.group()
        end = mo.end()
    literals[-1] += text[end:]
    return literals[0], tuple(
        (name, written, after) for (name, written), after in zip(placeholders, literals[1:], strict=True)
    )


@lru_cache(maxsize=4096)
def split(text: str) -> Pieces:
    """`text` as `Template(text).safe_substitute` reads it (cached by the text alone: a compiled pattern's
    hash reads its whole program every time)."""
    return _pieces(Template.pattern, Template.delimiter, text)


def substitute(pieces: Pieces, mapping: Mapping[str, Any]) -> str:
    """`Template(text).safe_substitute(mapping)` for the pieces of `text` (`split`)."""
    head, placeholders = pieces
    if not placeholders:
        return head
    out = [head]
    append = out.append
    for name, written, after in placeholders:
        try:
            append(str(mapping[name]))
        except KeyError:
            append(written)
        append(after)
    return "".join(out)


class Template(string.Template):
    def safe_substitute(self, mapping: Mapping[str, Any] = _NO_MAPPING, /, **kws: Any) -> str:
        if mapping is _NO_MAPPING:
            mapping = kws
        elif kws:
            mapping = ChainMap(kws, mapping)  # type: ignore[arg-type]
        if type(self) is Template:
            return substitute(split(self.template), mapping)
        return substitute(_pieces(type(self).pattern, self.delimiter, self.template), mapping)
