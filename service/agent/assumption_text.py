"""Assumptions in words: `prompts/<lang>/assumptions.toml` [assumptions].<code>, filled with the values.

The estimator records each default it chose as a code and values (tools/assumptions.py); the sentence
is said here, in every language. `with_english_text` fills `Assumption.reason` (and `Component.label`,
service/agent/component_text.py) with the English words where an Estimate leaves the service as JSON
(CLI `estimate --json`, HTTP, SSE).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from service.agent.prompt_files import load_toml
from tools.result import Assumption, Component, Estimate
from tools.units import fmt_gib

# Codes the service makes itself (the question parser's choices, the Hub look-up) -> the values they use
SERVICE_CODES: dict[str, tuple[str, ...]] = {
    "task_from_training_words": (),
    "architecture_from_shapes": ("shapes", "base"),
    "model_distill": ("model",),
    "card_apple_memory": ("gb", "card"),
    "card_from_memory": ("gb", "card"),
    "task_4bit_finetune": (),
    "task_prompt_tuning": (),
    "ollama_4bit": (),
    "rl_lora_rank": ("method", "rank"),
    "model.hub": ("repo", "revision", "params", "dtype", "quant", "implied"),
    "model.hub_cache": ("repo", "revision", "params", "dtype", "quant", "implied"),
}

# the catalog's readings of a GPU name (tools/catalog/gpus.py): GpuInfo.alias_note says them in English
GPU_NAME_READINGS = frozenset(
    {"gpu.alias", "gpu.alias_other", "gpu.alias_others", "gpu.stated_size", "gpu.stated_size_of_card"}
)
PLACEHOLDER = re.compile(r"\$\{(\w+)\}")
_OPTIONAL = re.compile(r"\[\[(.*?)\]\]")


@lru_cache(maxsize=4)
def templates(language: str) -> dict[str, str]:
    """code -> template in `language` (English for any other)."""
    lang = language if language in ("en", "zh") else "en"
    return {str(k): str(v) for k, v in load_toml(lang, "assumptions.toml").get("assumptions", {}).items()}


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


def fill(template: str, values: dict[str, Any], joiner: str = ", ") -> str:
    """`template` with its ${name}s filled; a [[part]] whose values are missing or empty is left out."""
    types = tuple(v.__class__ for v in values.values())
    if _SCALARS.issuperset(types):  # the same few defaults and labels recur from answer to answer
        return _fill_scalars(template, joiner, tuple(values.items()), types)
    return _fill(template, values, joiner)


_SCALARS = frozenset({str, int, float, bool, type(None)})


@lru_cache(maxsize=4096)
def _fill_scalars(
    template: str, joiner: str, items: tuple[tuple[str, Any], ...], types: tuple[type, ...]
) -> str:
    """`fill` of plain values, remembered (`types` keeps 1, 1.0 and True apart: they are equal keys)."""
    return _fill(template, dict(items), joiner)


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


def assumption_text(a: Assumption, language: str) -> str:
    """Why the estimator (or the parser) chose `a.value` for `a.field`, in `language`."""
    return (code_text(a.code, a.values, language) if a.code else None) or a.reason or ""


def code_text(code: str, values: dict[str, Any], language: str) -> str | None:
    """The sentence of assumption `code` with `values` in `language` (None for an unknown code: a defect
    tests/test_assumptions.py catches)."""
    template = templates(language).get(code) or templates("en").get(code)
    return None if template is None else fill(template, values, list_joiner(language))


@lru_cache(maxsize=4)
def list_joiner(language: str) -> str:
    lang = language if language in ("en", "zh") else "en"
    return str(load_toml(lang, "assumptions.toml").get("text", {}).get("list_joiner", ", "))


def with_english_text(estimate: Estimate) -> Estimate:
    """A copy of `estimate` whose assumptions carry their English sentence in `reason`, whose components
    carry their English name in `label` (and remark in `note`), whose suggestions carry their English
    `change` and `rationale`, and whose `gpu.alias_note` says how the GPU name was read (what the JSON
    users see keeps them all)."""
    components = [_english_component(c) for c in estimate.components]
    reasons = [
        a if a.reason else a.model_copy(update={"reason": assumption_text(a, "en")})
        for a in estimate.assumptions
    ]
    update: dict[str, Any] = {"assumptions": reasons, "components": components}
    if (
        estimate.suggestions
    ):  # the planner's change and rationale in English (service/agent/suggestion_text.py)
        from service.agent.suggestion_text import english_suggestion

        update["suggestions"] = [english_suggestion(sg) for sg in estimate.suggestions]
    if estimate.per_gpu.gpu_role is None and estimate.per_gpu.gpu_role_parts:
        from service.agent.component_text import gpu_role_text

        role = gpu_role_text(estimate.per_gpu, "en")
        update["per_gpu"] = estimate.per_gpu.model_copy(update={"gpu_role": role})
    read_as = next((a for a in reasons if a.field == "gpu" and a.code in GPU_NAME_READINGS), None)
    if read_as is not None and estimate.gpu.alias_note is None:  # how the GPU name was read, in English
        update["gpu"] = estimate.gpu.model_copy(update={"alias_note": read_as.reason})
    return estimate.model_copy(update=update)


def _english_component(c: Component) -> Component:
    """`c` with its English `label` and `note` filled where it has a code for them and no text yet."""
    from service.agent.component_text import component_label_text, component_note_text

    update: dict[str, Any] = {}
    if c.label_code and not c.label:
        update["label"] = component_label_text(c, "en")
    if c.note_code and not c.note:
        update["note"] = component_note_text(c, "en")
    return c.model_copy(update=update) if update else c
