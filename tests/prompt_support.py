"""The template texts of prompts/ (every string with a `$` in every prompts/<lang>/*.toml file), for the
tests that check a template filler against its definition on all of them."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def prompt_templates(edge_cases: Iterable[str] = ()) -> list[str]:
    """Every template text of prompts/ with a `$`, and `edge_cases`, sorted."""
    found = set(edge_cases)
    for path in sorted(PROMPTS.glob("*/*.toml")):
        found.update(s for s in _strings(tomllib.loads(path.read_text(encoding="utf-8"))) if "$" in s)
    return sorted(found)
