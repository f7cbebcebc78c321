"""Component labels in words: `prompts/<lang>/components.toml` [labels].<label_code>, filled with the
component's label values (words for a value from [values] "<name>.<value>", else the value itself); a
component's remark from [notes].<note_code>."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from service.agent.fill_text import fill, remembered
from service.agent.prompt_files import load_toml
from tools.result import Component, PerGpu


@lru_cache(maxsize=4)
def label_tables(language: str) -> tuple[dict[str, str], dict[str, str]]:
    """(label code -> template, "<name>.<value>" -> words) in `language` (English for any other)."""
    data = load_toml(language if language in ("en", "zh") else "en", "components.toml")
    return (
        {str(k): str(v) for k, v in data.get("labels", {}).items()},
        {str(k): str(v) for k, v in data.get("values", {}).items()},
    )


@remembered
def label_text(code: str, values: dict[str, Any], language: str) -> str | None:
    """The label `code` with `values` in `language`, or None when no language has a template for it."""
    templates, words = label_tables(language)
    template = templates.get(code) or label_tables("en")[0].get(code)
    if template is None:
        return None
    return fill(template, {k: words.get(f"{k}.{v}", v) for k, v in values.items()})


def component_label_text(component: Component, language: str) -> str | None:
    """What `component` holds, in `language` (None when it carries no label code)."""
    if not component.label_code:
        return None
    return label_text(component.label_code, component.label_values, language)


@lru_cache(maxsize=4)
def note_table(language: str) -> dict[str, str]:
    """note code -> words in `language` (English for any other)."""
    data = load_toml(language if language in ("en", "zh") else "en", "components.toml")
    return {str(k): str(v) for k, v in data.get("notes", {}).items()}


def component_note_text(component: Component, language: str) -> str | None:
    """The remark on `component` in `language`: its note code's words (English when `language` has none),
    else the stored `note` of an Estimate saved before note codes; None when it has no remark."""
    code = component.note_code
    if not code:
        return component.note
    return note_table(language).get(code) or note_table("en").get(code) or component.note


@lru_cache(maxsize=4)
def gpu_role_table(language: str) -> dict[str, str]:
    """gpu role part code (and "where.<value>", "joiner") -> words in `language`."""
    data = load_toml(language if language in ("en", "zh") else "en", "components.toml")
    return {str(k): str(v) for k, v in data.get("gpu_role", {}).items()}


def gpu_role_text(per_gpu: PerGpu, language: str) -> str | None:
    """Which GPU the estimate is for, in `language`, from `per_gpu.gpu_role_parts`; the stored English
    `gpu_role` of an Estimate saved before the parts were data; None when neither is there."""
    parts = per_gpu.gpu_role_parts
    if not parts:
        return per_gpu.gpu_role
    table = gpu_role_table(language)
    said = []
    for part in parts:
        values = {
            k: table.get(f"{k}.{v}", str(v)) for k, v in dict(part.get("values") or {}).items()
        }  # 1024 as is
        said.append(fill(table.get(str(part["code"]), str(part["code"])), values))
    return table.get("joiner", ", ").join(said)
