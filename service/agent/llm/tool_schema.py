"""A compact JSON schema for the estimator tools' arguments: what the model sends, in few characters.

Pydantic's schema of a Scenario is 16,230 characters (the nested `architecture` alone 10.7k), sent
twice per request (two tools) and again every round trip. The model names a model by catalog id or
HF repo id, so `architecture` is left out; each field keeps its type and a short description, and an
enum is written as text ("one of: a|b|c"). The tool validates the arguments against the Scenario
itself (service.agent.llm.tools), so a wrong value still gets a clear error the model can fix.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_DESCRIPTION_CHARS = 90  # a field's description is cut to its first sentence, at most this long
_FULL_DESCRIPTION = frozenset({"follow_up"})  # words the model needs whole
_SIMPLE_TYPES = frozenset({"string", "integer", "number", "boolean"})


def _short(text: str) -> str:
    first = text.split(". ")[0].strip().rstrip(".")
    return first if len(first) <= _DESCRIPTION_CHARS else first[: _DESCRIPTION_CHARS - 3].rstrip() + "..."


def _field(name: str, prop: dict[str, Any]) -> dict[str, Any]:
    options = [o for o in prop.get("anyOf", [prop]) if o.get("type") != "null"]
    types = sorted({o["type"] for o in options if o.get("type") in _SIMPLE_TYPES})
    enum = [v for o in options for v in o.get("enum", [])]
    item: dict[str, Any] = {}
    if len(types) == 1:
        item["type"] = types[0]
    elif types:
        item["type"] = types
    description = prop.get("description", "")
    words = description if name in _FULL_DESCRIPTION else _short(description)
    if enum and not all(str(v) in words for v in enum):
        words = (words + "; " if words else "") + "one of: " + "|".join(str(v) for v in enum)
    if words:
        item["description"] = words
    if any(o.get("type") == "array" for o in options):
        item["type"], item["items"] = "array", {"type": "string"}
    return item


def compact_schema(
    model: type[BaseModel], exclude: frozenset[str] = frozenset({"architecture"})
) -> dict[str, Any]:
    """The arguments' JSON schema: every field optional, with its type and short words."""
    full = model.model_json_schema()
    properties = {
        name: _field(name, prop) for name, prop in full.get("properties", {}).items() if name not in exclude
    }
    return {"type": "object", "properties": properties}


# a second tool with the same arguments refers to the first tool's schema instead of repeating it
SAME_AS_ESTIMATE = {"type": "object", "additionalProperties": True}
