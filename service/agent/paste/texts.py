"""The paste answer's lines in the user's language (prompts/<lang>/paste.toml)."""

from __future__ import annotations

from typing import Any

from service.agent.paste.reading import FORMATS, PasteError, Reading
from service.agent.prompt_files import load_toml
from service.agent.templating import Template


def text(language: str, section: str, name: str, /, **values: Any) -> str:
    table = load_toml(language, "paste.toml").get(section, {})
    template = table.get(name) or load_toml("en", "paste.toml").get(section, {}).get(name, name)
    return Template(str(template)).safe_substitute({k: str(v) for k, v in values.items()})


def _value(language: str, field: str, fields: dict[str, Any]) -> str:
    if field == "architecture":
        return text(language, "text", "architecture_value")
    value = fields.get(field)
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def reading_lines(reading: Reading, fields: dict[str, Any], language: str) -> list[str]:
    """Which format was read, every key used (and the field it became), every key not used and why, what
    was assumed."""
    lines = [text(language, "text", "read", format=reading.format)]
    if reading.used:
        lines.append(text(language, "text", "used_head"))
        for key, named in reading.used.items():
            parts = [part.strip() for part in named.split(",") if part.strip() and part.strip() != "-"]
            shown = "; ".join(
                f"{part} = {_value(language, part, fields)}" if part in fields else part for part in parts
            )
            lines.append(text(language, "text", "used_item", key=key, field=shown))
    if reading.ignored:
        lines.append(text(language, "text", "ignored_head"))
        lines += [
            text(language, "text", "ignored_item", key=item.key, why=text(language, "why", item.why))
            for item in reading.ignored
        ]
    if reading.assumed:
        lines.append(text(language, "text", "assumed_head"))
        lines += [
            text(language, "text", "assumed_item", text=text(language, "assumed", code, **values))
            for code, values in reading.assumed
        ]
    return lines


KNOWN_ERRORS = frozenset(
    {"bad_yaml", "bad_json", "bad_python", "bad_command", "not_this_format", "too_large"}
)


def error_text(err: PasteError, language: str, format_name: str | None = None) -> str:
    return text(
        language,
        "error",
        err.code
        if err.code in ("bad_yaml", "bad_json", "bad_python", "bad_command", "not_this_format")
        else "unknown_format",
        message=str(err),
        line=err.line if err.line is not None else "?",
        column=err.column if err.column is not None else "?",
        accepted=", ".join(FORMATS),
        format=format_name or "",
    )
