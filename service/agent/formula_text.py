"""The symbols of component formulas, said in words: `prompts/<lang>/formulas.toml` [symbols].

Formulas (`Component.formula`, `.substituted`) are written in symbols, units, numbers and library or
kernel names only (tools/ holds no prose); the answer lists, under the breakdown, what each symbol that
appears in its formulas means, in the answer's language. Nothing in a formula is rewritten."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from itertools import chain

from service.agent.fill_text import fill_plain
from service.agent.prompt_files import load_toml
from tools.result import Component

SYMBOL = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # one identifier of a formula (a symbol, unit or name)


@lru_cache(maxsize=4)
def formula_tables(language: str) -> tuple[dict[str, str], dict[str, str]]:
    """(symbol -> meaning, [text] templates) in `language` (English for any other)."""
    data = load_toml(language if language in ("en", "zh") else "en", "formulas.toml")
    return (
        {str(k): str(v) for k, v in data.get("symbols", {}).items()},
        {str(k): str(v) for k, v in data.get("text", {}).items()},
    )


def formula_symbols(texts: Iterable[str]) -> list[str]:
    """The identifiers of `texts` in order of first appearance, each once."""
    return list(dict.fromkeys(chain.from_iterable(map(_identifiers, filter(None, texts)))))


@lru_cache(maxsize=4096)
def _identifiers(text: str) -> tuple[str, ...]:
    """The identifiers of one formula text, in order, each once (a component's symbolic formula recurs
    from answer to answer)."""
    return tuple(dict.fromkeys(SYMBOL.findall(text)))


def symbol_meanings(components: Iterable[Component], language: str) -> dict[str, str]:
    """What each legend symbol the components' formulas use means, in order of first appearance."""
    meanings = formula_tables(language)[0]
    texts = (t for c in components for t in (c.formula, c.substituted))
    return {sym: meanings[sym] for sym in formula_symbols(texts) if sym in meanings}


def legend_lines(components: Iterable[Component], language: str) -> list[str]:
    """The title and one line per symbol defined in [symbols] that the components' formulas use."""
    texts = (t for c in components for t in (c.formula, c.substituted))
    return list(_legend(tuple(formula_symbols(texts)), language))


@lru_cache(maxsize=1024)
def _legend(symbols: tuple[str, ...], language: str) -> tuple[str, ...]:
    """`legend_lines` of formulas whose identifiers are `symbols` (the same few sets recur)."""
    meanings = formula_tables(language)[0]
    used = [sym for sym in symbols if sym in meanings]
    if not used:
        return ()
    text = formula_tables(language)[1]
    items = [fill_plain(text["legend_item"], {"symbol": sym, "meaning": meanings[sym]}) for sym in used]
    return (text["legend_title"], *items)
