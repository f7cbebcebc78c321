"""Estimator notes and no-effect explanations in words: `prompts/<lang>/notes.toml` [notes].<code> filled
with the note's values, `prompts/<lang>/no_effect.json` filled with a NoEffect's values.

Kept apart from service/agent/render.py (which imports them) so that a channel printing an Estimate
(`vramwise estimate`'s table) says its notes without loading the answer templates and event models.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from service.agent.prompt_files import load_toml, read_prompt
from service.agent.templating import Template
from tools.notes import Note
from tools.result import NoEffect


def _lang(language: str | None) -> str:
    return language if language in ("en", "zh") else "en"


def no_effect_text(item: NoEffect, language: str) -> str:
    """Why a stated setting does not change peak memory, in `language` (prompts/<lang>/no_effect.json)."""
    return no_effect_templates(_lang(language))[item.code].format(**item.values)


@lru_cache(maxsize=4)
def no_effect_templates(language: str) -> dict[str, str]:
    return dict(json.loads(read_prompt(_lang(language), "no_effect.json")))


def note_text(note: Note, language: str) -> str:
    """An estimator note in `language`: prompts/<lang>/notes.toml [notes].<code>, filled with the note's
    values (integers with thousands separators; structured values in the [note_values] words)."""
    lang = _lang(language)
    table = _note_table(lang, "notes")
    template = table.get(note.code) or _note_table("en", "notes").get(note.code, note.code)
    words = _note_table(lang, "note_values")
    values = {name: _note_value(name, value, words) for name, value in note.values.items()}
    return Template(str(template)).safe_substitute(values)


def _note_value(name: str, value: Any, words: dict[str, Any]) -> str:
    if name == "models":  # [{role, trainable}]: "actor (trainable), reference (frozen)"
        roles = {str(k): str(v) for k, v in dict(words.get("role", {})).items()}
        return str(words.get("joiner", ", ")).join(
            Template(str(words.get("model", "${role} (${trainable})"))).safe_substitute(
                role=roles.get(m["role"], m["role"]),
                trainable=words.get("trainable" if m["trainable"] else "frozen", ""),
            )
            for m in value
        )
    # a value said in words: [note_values] recipe.mixed, cards.1, lora_reference.True
    spelled = words.get(name)
    if isinstance(spelled, dict) and str(value) in spelled:
        return str(spelled[str(value)])
    text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
    if f"{name}_other" in words:  # the words for any other value: cards_other = "${n} GPUs"
        return Template(str(words[f"{name}_other"])).safe_substitute(n=text)
    return text


def _note_table(language: str, section: str) -> dict[str, Any]:
    return dict(load_toml(language, "notes.toml").get(section, {}))
