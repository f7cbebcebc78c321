"""Stated settings that do NOT change peak memory, recognised and explained (never silently ignored).

Each rule answers one question for one Scenario field: "given this value, which explanation
applies, and with which numbers?". The explanation texts are data, per language, in
`prompts/<lang>/no_effect.json` (English and Chinese are both first-class).

Why these have no effect (or only the stated small one):
- epochs, learning_rate, warmup_steps, lora_alpha: scalars or loop counts, no tensor changes size.
- gradient_accumulation_steps: activations are freed after each micro-batch's backward; gradients
  accumulate into the buffer that exists anyway (HF Trainer / DeepSpeed engine).
- global_batch_size = micro-batch x accumulation x DP: only the micro-batch is on one GPU at once.
- lora_dropout: PEFT uses nn.Identity for p = 0 (peft/tuners/lora/layer.py update_layer); p > 0
  keeps a dropped copy of each targeted module's input for backward (small activation cost).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from tools.result import NoEffect
from tools.scenario import Scenario

Language = Literal["en", "zh"]
LANGUAGES: tuple[str, ...] = ("en", "zh")


@lru_cache(maxsize=4)
def load_templates(language: str = "en") -> dict[str, str]:
    """The explanation templates of one language, from prompts/<language>/no_effect.json."""
    if language not in LANGUAGES:
        language = "en"
    return dict(json.loads(read_prompt_text(language, "no_effect.json")))


def read_prompt_text(language: str, name: str) -> str:
    """Read prompts/<language>/<name> through importlib.resources.

    Falls back to the package's real directories when `prompts` is seen as a namespace package
    (an editable install made before prompts/__init__.py existed maps it that way, and
    importlib.resources then rejects the finder's path-hook entry).
    """
    try:
        return resources.files("prompts").joinpath(language, name).read_text(encoding="utf-8")
    except (NotADirectoryError, FileNotFoundError, TypeError):
        import prompts

        for base in getattr(prompts, "__path__", []):
            candidate = Path(base) / language / name
            if candidate.is_file():
                return candidate.read_text(encoding="utf-8")
        raise


def _fmt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _data_parallel_size(s: Scenario) -> int:
    """DP = num_gpus / (TP x PP x CP): the ranks that split the global batch (Megatron's layout)."""
    model_parallel = (s.tp or 1) * (s.pp or 1) * (s.cp or 1)
    return max(1, (s.num_gpus or 1) // model_parallel)


@dataclass(frozen=True)
class Explanation:
    template_key: str
    variables: dict[str, Any]


@dataclass(frozen=True)
class ScalarRule:
    """A setting that never changes any tensor size: one template."""

    field: str

    def explain(self, s: Scenario, value: Any) -> Explanation:
        return Explanation(self.field, {"value": _fmt(value), "micro_batch": s.batch_size or 1})


@dataclass(frozen=True)
class LoraDropoutRule:
    """p = 0: PEFT's nn.Identity, nothing at all; p > 0: a small activation cost, stated."""

    field: str = "lora_dropout"

    def explain(self, s: Scenario, value: Any) -> Explanation:
        key = "lora_dropout_zero" if float(value) == 0.0 else "lora_dropout_positive"
        return Explanation(key, {"value": _fmt(value)})


@dataclass(frozen=True)
class GlobalBatchRule:
    """global batch = micro-batch x accumulation x DP; only the micro-batch sets the peak."""

    field: str = "global_batch_size"

    def explain(self, s: Scenario, value: Any) -> Explanation:
        micro = s.batch_size or 1
        dp = _data_parallel_size(s)
        variables: dict[str, Any] = {"value": _fmt(value), "micro_batch": micro, "dp": dp}
        if s.gradient_accumulation_steps is None:
            variables["grad_accum_implied"] = max(1, -(-int(value) // (micro * dp)))
            return Explanation("global_batch_size_implied", variables)
        accum = s.gradient_accumulation_steps
        product = micro * accum * dp
        variables.update(grad_accum=accum, product=product)
        key = "global_batch_size" if product == int(value) else "global_batch_size_mismatch"
        return Explanation(key, variables)


RULES: tuple[ScalarRule | LoraDropoutRule | GlobalBatchRule, ...] = (
    ScalarRule("epochs"),
    ScalarRule("gradient_accumulation_steps"),
    ScalarRule("learning_rate"),
    ScalarRule("lora_alpha"),
    LoraDropoutRule(),
    ScalarRule("warmup_steps"),
    GlobalBatchRule(),
)
NO_EFFECT_FIELDS: tuple[str, ...] = tuple(r.field for r in RULES)


def no_effect_notes(scenario: Scenario, *, language: str = "en") -> list[NoEffect]:
    """One NoEffect per stated setting that does not change peak memory, in `language`."""
    templates = load_templates(language)
    notes: list[NoEffect] = []
    for rule in RULES:
        value = getattr(scenario, rule.field)
        if value is None:
            continue
        explanation = rule.explain(scenario, value)
        text = templates[explanation.template_key].format(**explanation.variables)
        notes.append(NoEffect(field=rule.field, value=value, explanation=text))
    return notes
