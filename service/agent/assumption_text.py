"""Assumptions in words: `prompts/<lang>/assumptions.toml` [assumptions].<code>, filled with the values.

The estimator records each default it chose as a code and values (tools/assumptions.py); the sentence
is said here, in every language. `with_english_text` fills `Assumption.reason` (and `Component.label`,
service/agent/component_text.py) with the English words where an Estimate leaves the service as JSON
(CLI `estimate --json`, HTTP, SSE).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from service.agent.component_text import component_label_text, component_note_text, gpu_role_text
from service.agent.fill_text import PLACEHOLDER as PLACEHOLDER  # re-exported: the placeholder pattern
from service.agent.fill_text import fill, remembered
from service.agent.prompt_files import load_toml
from service.agent.suggestion_text import english_suggestion
from tools.copies import copy_with
from tools.result import Assumption, Component, Estimate

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
    "rl_total_length": ("prompt", "completion", "total"),
    "gpus_over_nodes": ("nodes", "per_node", "total"),
    "model_size_only": ("name", "size"),
    "model_variant": ("name", "model"),
    "model.hub": ("repo", "revision", "params", "dtype", "quant", "implied"),
    "model.hub_cache": ("repo", "revision", "params", "dtype", "quant", "implied"),
}

# the catalog's readings of a GPU name (tools/catalog/gpus.py): GpuInfo.alias_note says them in English
GPU_NAME_READINGS = frozenset(
    {"gpu.alias", "gpu.alias_other", "gpu.alias_others", "gpu.stated_size", "gpu.stated_size_of_card"}
)


@lru_cache(maxsize=4)
def templates(language: str) -> dict[str, str]:
    """code -> template in `language` (English for any other)."""
    lang = language if language in ("en", "zh") else "en"
    return {str(k): str(v) for k, v in load_toml(lang, "assumptions.toml").get("assumptions", {}).items()}


def assumption_text(a: Assumption, language: str) -> str:
    """Why the estimator (or the parser) chose `a.value` for `a.field`, in `language`."""
    return (code_text(a.code, a.values, language) if a.code else None) or a.reason or ""


@remembered
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
        a if a.reason else copy_with(a, {"reason": assumption_text(a, "en")}) for a in estimate.assumptions
    ]
    update: dict[str, Any] = {"assumptions": reasons, "components": components}
    if (
        estimate.suggestions
    ):  # the planner's change and rationale in English (service/agent/suggestion_text.py)
        update["suggestions"] = [english_suggestion(sg) for sg in estimate.suggestions]
    if estimate.per_gpu.gpu_role is None and estimate.per_gpu.gpu_role_parts:
        role = gpu_role_text(estimate.per_gpu, "en")
        update["per_gpu"] = copy_with(estimate.per_gpu, {"gpu_role": role})
    read_as = next((a for a in reasons if a.field == "gpu" and a.code in GPU_NAME_READINGS), None)
    if read_as is not None and estimate.gpu.alias_note is None:  # how the GPU name was read, in English
        update["gpu"] = copy_with(estimate.gpu, {"alias_note": read_as.reason})
    return copy_with(estimate, update)


def _english_component(c: Component) -> Component:
    """`c` with its English `label` and `note` filled where it has a code for them and no text yet."""
    update: dict[str, Any] = {}
    if c.label_code and not c.label:
        update["label"] = component_label_text(c, "en")
    if c.note_code and not c.note:
        update["note"] = component_note_text(c, "en")
    return copy_with(c, update) if update else c
