"""Planner suggestions in words: `prompts/<lang>/suggestions.toml`, filled with the suggestion's codes.

tools/planner.py records each suggestion as data (`change_code` with `change_values`, `moves` and
`layout_parts` as `{"code", "values"}`, `num_gpus`, `fidelity_rank`, `step_time_factor`, `total_bytes`);
`change_words` and `rationale_words` say it in a language. `with_english_suggestions` fills the English
`change` and `rationale` where an Estimate leaves the service as JSON (service/agent/assumption_text.py
`with_english_text`). Chinese answers compose their change from `scenario_changes`
(service/agent/render.py `change_text`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from service.agent.prompt_files import load_toml
from service.agent.templating import split, substitute
from tools.copies import copy_with
from tools.result import Suggestion


@lru_cache(maxsize=16)
def _table(language: str, name: str) -> dict[str, str]:
    """One table of suggestions.toml as strings (read-only: shared by every call)."""
    lang = language if language in ("en", "zh") else "en"
    return {str(k): str(v) for k, v in load_toml(lang, "suggestions.toml").get(name, {}).items()}


def _say(template: str, values: dict[str, Any]) -> str:
    # integers as plain digits ("1024 GPUs"), as the planner always said them (substitute says str(value))
    return substitute(split(template), values)


def _part(language: str, table: str, part: dict[str, Any]) -> str:
    return _say(_table(language, table)[str(part["code"])], dict(part.get("values") or {}))


def gpus_words(n: int, language: str) -> str:
    """'a single GPU' / '8 GPUs' in `language`."""
    table = _table(language, "gpus")
    return _say(table["1"] if n == 1 else table["n"], {"n": n})


def change_words(sg: Suggestion, language: str) -> str:
    """The suggestion's change in `language`, from its codes (a pre-code stored one keeps its `change`)."""
    if sg.change_code is None:
        return sg.change or ""
    text = _table(language, "text")
    moves = text["move_joiner"].join(_part(language, "move", m) for m in sg.moves)
    layout = text["layout_joiner"].join(_part(language, "layout", p) for p in sg.layout_parts)
    values = dict(sg.change_values)
    n = values.get("gpus")
    if isinstance(n, int):
        values["gpus"] = gpus_words(n, language)
    table = _table(language, "change")
    key = f"{sg.change_code}.1" if n == 1 and f"{sg.change_code}.1" in table else sg.change_code
    return _say(table[key], {**values, "moves": moves, "layout": layout})


def rationale_words(sg: Suggestion, language: str) -> str | None:
    """The suggestion's cost line in `language` (GPUs, fidelity, step time, GiB per GPU)."""
    if sg.fidelity_rank is None or sg.step_time_factor is None:
        return sg.rationale
    values = {
        "gpus": gpus_words(sg.num_gpus, language),
        "fidelity": _table(language, "fidelity")[str(sg.fidelity_rank)],
        "rank": sg.fidelity_rank,
        "factor": f"{sg.step_time_factor:.2f}",
        "gib": f"{sg.total_bytes / 2**30:.1f}",  # GiB: bytes / 2^30
    }
    return _say(_table(language, "rationale")["line"], values)


def english_suggestion(sg: Suggestion) -> Suggestion:
    """`sg` with its English `change` and `rationale` filled where it has codes and no text yet."""
    update: dict[str, Any] = {}
    if sg.change is None:
        update["change"] = change_words(sg, "en")
    if sg.rationale is None and sg.fidelity_rank is not None:
        update["rationale"] = rationale_words(sg, "en")
    return copy_with(sg, update) if update else sg
